package sdk

import (
	"context"
	"fmt"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

// Timer and recurrence wire types.
type (
	// RecurrenceRule makes a timer recurring: a recurrence kind the
	// extension declares (Recurrence) and its rule.
	RecurrenceRule = protocol.RecurrenceRule
	// RecurrenceNextParams asks for a rule's next occurrence after a time.
	RecurrenceNextParams = protocol.RecurrenceNextParams
	// RecurrenceNextResult is the next occurrence (and, optionally, the
	// payload its Event carries), or Done.
	RecurrenceNextResult = protocol.RecurrenceNextResult
)

// Timer is a durable timer the host keeps: at Due it accepts an Event of
// Family with Payload into Scope (source "<extension>/timer"), and with a
// Recurrence it rearms it for the rule's next occurrence.
type Timer struct {
	// ID is the extension's own name for the timer; arming an ID again
	// replaces the timer.
	ID         string
	Scope      string
	Due        time.Time
	Family     string
	Payload    Payload
	Recurrence *RecurrenceRule
}

// ArmTimer arms (or replaces) one of the extension's timers. The family and
// the recurrence kind must be the extension's own, and the scope one that
// uses it.
func (h *Host) ArmTimer(ctx context.Context, t Timer) error {
	_, err := invoke(ctx, h, protocol.TimerArm, protocol.TimerArmParams{
		ID: t.ID, Scope: t.Scope, Due: t.Due, Family: t.Family, Payload: t.Payload, Recurrence: t.Recurrence,
	})
	return err
}

// CancelTimer cancels one of the extension's timers; cancelled is false
// when none of that ID was armed.
func (h *Host) CancelTimer(ctx context.Context, id string) (cancelled bool, err error) {
	r, err := invoke(ctx, h, protocol.TimerCancel, protocol.TimerCancelParams{ID: id})
	return r.Cancelled, err
}

// RecurrenceFunc answers recurrence.next for one recurrence kind. The host
// calls it inside the transaction that fires the timer, bounded to 250 ms:
// it must be pure and deterministic, and it may not call the host.
type RecurrenceFunc func(ctx context.Context, r *Request, p RecurrenceNextParams) (RecurrenceNextResult, error)

// Recurrence declares a recurrence kind (a dotted name under the
// extension's) and serves its recurrence.next. Registering a kind twice
// panics.
func (x *Extension) Recurrence(kind string, fn RecurrenceFunc) *Extension {
	once("Recurrence "+kind, x.recurrences[kind] != nil, fn == nil)
	if x.recurrences == nil {
		x.recurrences = make(map[string]RecurrenceFunc)
		x.Method(protocol.MethodRecurrenceNext, typed(protocol.MethodRecurrenceNext, x.recurrenceNext))
	}
	x.recurrences[kind] = fn
	x.Manifest.Provides.Recurrences = append(x.Manifest.Provides.Recurrences, protocol.Recurrence{Kind: kind})
	return x
}

// recurrenceNext dispatches recurrence.next to its kind's function.
func (x *Extension) recurrenceNext(ctx context.Context, r *Request, p RecurrenceNextParams) (RecurrenceNextResult, error) {
	fn, ok := x.recurrences[p.Kind]
	if !ok {
		return RecurrenceNextResult{}, protocol.Errorf(protocol.ErrUndeclared, "recurrence kind %q is not declared by %s", p.Kind, x.Manifest.Name)
	}
	res, err := fn(ctx, r, p)
	if err != nil {
		return RecurrenceNextResult{}, err
	}
	if !res.Done && !res.Next.After(p.After) {
		return RecurrenceNextResult{}, fmt.Errorf("recurrence %s: next occurrence %s is not after %s", p.Kind, res.Next, p.After)
	}
	return res, nil
}
