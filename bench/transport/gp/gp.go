// Package gp is the go-plugin (gRPC) side of the comparison, with
// hand-written grpc.ServiceDescs carrying the workload's JSON in protobuf
// BytesValues (protoc is not in this toolchain, as it was not for the
// seed's prototype). The extension serves Ext; the host serves Host over
// go-plugin's GRPCBroker for the extension's callbacks.
package gp

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Handshake is the plugin handshake both sides use.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "OPEN_CONDUIT_BENCH",
	MagicCookieValue: "transport",
}

// Bytes is the one message type.
type Bytes = wrapperspb.BytesValue

// ExtServer is what the extension serves.
type ExtServer interface {
	Echo(context.Context, *Bytes) (*Bytes, error)
	Callbacks(context.Context, *Bytes) (*Bytes, error)
	Upload(context.Context, *Bytes) (*Bytes, error)
	Wait(context.Context, *Bytes) (*Bytes, error)
	Crash(context.Context, *Bytes) (*Bytes, error)
}

// HostServer is what the host serves the extension over the broker.
type HostServer interface {
	Get(context.Context, *Bytes) (*Bytes, error)
	Write(context.Context, *Bytes) (*Bytes, error)
	Record(context.Context, *Bytes) (*Bytes, error)
}

func unary(service, name string, call func(srv any, ctx context.Context, in *Bytes) (*Bytes, error)) grpc.MethodDesc {
	return grpc.MethodDesc{
		MethodName: name,
		Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(Bytes)
			if err := dec(in); err != nil {
				return nil, err
			}
			if icpt == nil {
				return call(srv, ctx, in)
			}
			info := &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + service + "/" + name}
			return icpt(ctx, in, info, func(ctx context.Context, req any) (any, error) { return call(srv, ctx, req.(*Bytes)) })
		},
	}
}

// ExtDesc is the extension's service.
var ExtDesc = grpc.ServiceDesc{
	ServiceName: "bench.Ext",
	HandlerType: (*ExtServer)(nil),
	Methods: []grpc.MethodDesc{
		unary("bench.Ext", "Echo", func(s any, c context.Context, in *Bytes) (*Bytes, error) { return s.(ExtServer).Echo(c, in) }),
		unary("bench.Ext", "Callbacks", func(s any, c context.Context, in *Bytes) (*Bytes, error) { return s.(ExtServer).Callbacks(c, in) }),
		unary("bench.Ext", "Upload", func(s any, c context.Context, in *Bytes) (*Bytes, error) { return s.(ExtServer).Upload(c, in) }),
		unary("bench.Ext", "Wait", func(s any, c context.Context, in *Bytes) (*Bytes, error) { return s.(ExtServer).Wait(c, in) }),
		unary("bench.Ext", "Crash", func(s any, c context.Context, in *Bytes) (*Bytes, error) { return s.(ExtServer).Crash(c, in) }),
	},
}

// HostDesc is the host's service.
var HostDesc = grpc.ServiceDesc{
	ServiceName: "bench.Host",
	HandlerType: (*HostServer)(nil),
	Methods: []grpc.MethodDesc{
		unary("bench.Host", "Get", func(s any, c context.Context, in *Bytes) (*Bytes, error) { return s.(HostServer).Get(c, in) }),
		unary("bench.Host", "Write", func(s any, c context.Context, in *Bytes) (*Bytes, error) { return s.(HostServer).Write(c, in) }),
		unary("bench.Host", "Record", func(s any, c context.Context, in *Bytes) (*Bytes, error) { return s.(HostServer).Record(c, in) }),
	},
}

// Invoke calls one method on conn.
func Invoke(ctx context.Context, conn *grpc.ClientConn, service, method string, in []byte) ([]byte, error) {
	out := new(Bytes)
	if err := conn.Invoke(ctx, "/"+service+"/"+method, &Bytes{Value: in}, out); err != nil {
		return nil, err
	}
	return out.Value, nil
}

// Plugin is the go-plugin Plugin for both sides: the extension sets Impl,
// the host gets a *Client.
type Plugin struct {
	plugin.Plugin
	Impl ExtServer
	// NewExt is given the broker on the extension side, so it can dial the
	// host's service by the id the host sends.
	NewExt func(broker *plugin.GRPCBroker) ExtServer
}

// GRPCServer registers the extension's service.
func (p *Plugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	impl := p.Impl
	if p.NewExt != nil {
		impl = p.NewExt(broker)
	}
	s.RegisterService(&ExtDesc, impl)
	return nil
}

// GRPCClient returns the host's handle on the extension.
func (p *Plugin) GRPCClient(_ context.Context, broker *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &Client{Conn: conn, Broker: broker}, nil
}

// Client is the host's handle on the extension.
type Client struct {
	Conn   *grpc.ClientConn
	Broker *plugin.GRPCBroker
}

// Call calls one extension method.
func (c *Client) Call(ctx context.Context, method string, in []byte) ([]byte, error) {
	return Invoke(ctx, c.Conn, "bench.Ext", method, in)
}
