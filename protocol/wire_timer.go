package protocol

import (
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/go-json-experiment/json/jsontext"
)

// Bounds of a timer.
const (
	// MaxTimerIDBytes bounds the id an extension gives a timer.
	MaxTimerIDBytes = 256
	// MaxRecurrenceRuleBytes bounds a recurrence's rule: it is stored with
	// the timer and sent with every recurrence.next.
	MaxRecurrenceRuleBytes = 64 << 10
)

// TimerArmParams arms a durable timer: at Due the host accepts an Event of
// Family with Payload into Scope, from the source "<extension>/timer".
// Arming an id the extension already armed replaces that timer.
type TimerArmParams struct {
	// ID is the extension's own name for the timer, unique among its timers.
	ID    string    `json:"id"`
	Scope string    `json:"scope_id"`
	Due   time.Time `json:"due"`
	// Family is one of the extension's declared families.
	Family  string  `json:"family"`
	Payload Payload `json:"payload"`
	// Recurrence, when set, rearms the timer after each firing; its kind is
	// one the extension declares.
	Recurrence *RecurrenceRule `json:"recurrence,omitempty"`
}

// TimerArmResult has no fields: the timer is stored when it answers.
type TimerArmResult struct{}

// TimerCancelParams cancels one of the extension's timers by its id.
type TimerCancelParams struct {
	ID string `json:"id"`
}

// TimerCancelResult says whether a timer of that id was armed.
type TimerCancelResult struct {
	Cancelled bool `json:"cancelled"`
}

// RecurrenceNextParams asks for the first occurrence of a rule strictly
// after After. It is an in-transaction call: pure, deterministic, bounded
// (it may make no callback). Timer and Payload are the timer's id (as the
// extension armed it) and its current payload.
type RecurrenceNextParams struct {
	Timer   string         `json:"timer"`
	Payload Payload        `json:"payload"`
	Kind    string         `json:"kind"`
	Rule    jsontext.Value `json:"rule,omitzero"`
	After   time.Time      `json:"after"`
}

// RecurrenceNextResult is the next occurrence, or Done when the rule has
// none left (the timer is then removed). Payload, when set, is what the
// next firing's Event carries (so it can say which occurrence it is);
// absent, the timer's payload stays.
type RecurrenceNextResult struct {
	Next    time.Time `json:"next,omitzero"`
	Done    bool      `json:"done,omitzero"`
	Payload *Payload  `json:"payload,omitempty"`
}

// Timer methods.
var (
	// TimerArm arms (or replaces) one of the extension's timers.
	TimerArm = Desc[TimerArmParams, TimerArmResult]{Name: MethodTimerArm}
	// TimerCancel cancels one of the extension's timers.
	TimerCancel = Desc[TimerCancelParams, TimerCancelResult]{Name: MethodTimerCancel}
	// RecurrenceNext asks a package for a rule's next occurrence.
	RecurrenceNext = Desc[RecurrenceNextParams, RecurrenceNextResult]{Name: MethodRecurrenceNext}
)

// TimerSource is the source of the Events extension's timers fire.
func TimerSource(extension string) string { return extension + "/timer" }

// Recurrence reports whether the manifest declares the recurrence kind.
func (m *Manifest) Recurrence(kind string) bool {
	return slices.ContainsFunc(m.Provides.Recurrences, func(r Recurrence) bool { return r.Kind == kind })
}

// CheckTimerID refuses an empty, oversized or unprintable timer id.
func CheckTimerID(id string) error {
	switch {
	case id == "":
		return Errorf(ErrInvalid, "a timer needs an id: the extension's own name for it, unique among its timers")
	case len(id) > MaxTimerIDBytes:
		return Errorf(ErrTooLarge, "a timer id of %d bytes is over the %d-byte bound: use a shorter id", len(id), MaxTimerIDBytes)
	case strings.IndexFunc(id, func(r rune) bool { return !unicode.IsPrint(r) || r == unicode.ReplacementChar }) >= 0:
		return Errorf(ErrInvalid, "timer id %q holds a control or invalid character: use printable UTF-8", id)
	}
	return nil
}

// CheckTimerArm applies every rule of timer.arm for the extension whose
// manifest is m, in this order: the id; a due time; a recurrence kind the
// manifest declares with a rule within its bound; then the rules of an
// Event it would emit (the payload's bounds, a configured scope that uses
// the extension (inScope says which), a family it declares, a payload
// schema that is absent or current). Every host judges timer.arm by it.
func CheckTimerArm(m *Manifest, inScope func(scope string) bool, p TimerArmParams) error {
	if err := CheckTimerID(p.ID); err != nil {
		return err
	}
	if p.Due.IsZero() {
		return Errorf(ErrInvalid, "timer %q needs a due time", p.ID)
	}
	if r := p.Recurrence; r != nil {
		if !m.Recurrence(r.Kind) {
			return Errorf(ErrUndeclared, "timer %q: recurrence kind %q is not declared by %s's manifest: declare it in provides.recurrences",
				p.ID, r.Kind, m.Name)
		}
		if len(r.Rule) > MaxRecurrenceRuleBytes {
			return Errorf(ErrTooLarge, "timer %q: a recurrence rule of %d bytes is over the %d-byte bound", p.ID, len(r.Rule), MaxRecurrenceRuleBytes)
		}
	}
	e := Emission{Scope: p.Scope, Source: TimerSource(m.Name), DeliveryID: p.ID, Type: p.Family, Payload: p.Payload}
	if p.Family == "" {
		return Errorf(ErrInvalid, "timer %q needs a family: the type of the Event it fires, one %s declares", p.ID, m.Name)
	}
	return HostKVRules(m, inScope).CheckEmission(e)
}
