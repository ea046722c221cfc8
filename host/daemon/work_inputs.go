package daemon

import (
	"context"
	"fmt"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// WorkInputs reads one page of a Work's inputs in the order they were
// routed to it, after input number q.After: at most q.Limit (client.
// MaxWorkInputsPage when 0) and, past the first, at most
// protocol.MaxPageBytes of Events, each with its route decision. An
// unknown Work is protocol.ErrNotFound.
func (d *Daemon) WorkInputs(_ context.Context, id string, q client.WorkInputsQuery) (client.WorkInputsPage, error) {
	res := client.WorkInputsPage{Work: id, Inputs: []client.WorkInput{}}
	known := false
	err := d.db.View(func(r *pebblekv.Reader) error {
		w, found, err := r.Work(id)
		if err != nil || !found {
			return err
		}
		known, res.InputCount = true, w.InputCount
		ins, more, err := r.WorkInputs(id, q.After, q.Limit)
		if err != nil {
			return err
		}
		page := protocol.NewPageBudget(q.Limit, client.MaxWorkInputsPage)
		for _, in := range ins {
			v, err := inputView(r, in.N, in.Event)
			if err != nil {
				return err
			}
			if !page.Add(v.Event.WireSize()) {
				more = true
				break
			}
			res.Inputs = append(res.Inputs, v)
		}
		if more && len(res.Inputs) > 0 {
			res.Next = res.Inputs[len(res.Inputs)-1].N
		}
		return nil
	})
	switch {
	case err != nil:
		return client.WorkInputsPage{}, fmt.Errorf("reading the inputs of Work %s: %w", id, err)
	case !known:
		return client.WorkInputsPage{}, errUnknownWork(id)
	}
	return res, nil
}
