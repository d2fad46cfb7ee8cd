package api

import (
	"time"

	"github.com/ordersync/ordersync/internal/tuning"
)

// DeliveryWorkflowType is the registered name of the Delivery workflow.
const DeliveryWorkflowType = "Delivery"

// DeliveryWorkflowID is the ID of a destination's long-running Delivery
// workflow: one per destination, so two starts cannot both deliver.
func DeliveryWorkflowID(destination string) string { return "delivery/" + destination }

// Delivery signals, updates and queries. Each message name is both a signal
// (fire and forget, works from `temporal workflow signal`) and an update
// (the caller gets the new status, and invalid input is rejected before it
// reaches history). Payloads are strict JSON: an unknown field is refused.
const (
	// SignalDeliveryPause stops delivery after the batch in flight.
	// Payload: PauseRequest (optional).
	SignalDeliveryPause = "pause"
	// SignalDeliveryResume continues a paused delivery and closes a tripped
	// breaker.
	SignalDeliveryResume = "resume"
	// SignalDeliveryRetry delivers set-aside (poison) changes again: one by
	// seq, or all. Payload: DeliverySelector.
	SignalDeliveryRetry = "retry"
	// SignalDeliverySkip drops set-aside changes without delivering them.
	// Payload: DeliverySelector.
	SignalDeliverySkip = "skip"
	// SignalDeliveryConfig replaces the destination's tuning from the next
	// batch on. Payload: DestinationSettings as JSON (name must match);
	// identity fields a whole destination entry carries (url, secret,
	// subject, brokers, topic, allow_plaintext, platforms) are ignored,
	// any other unknown field is refused by name.
	SignalDeliveryConfig = "config"
	// QueryDeliveryStatus returns DeliveryStatus.
	QueryDeliveryStatus = "status"
	// QueryDeliveryPoison returns []PoisonChange, lowest seq first.
	QueryDeliveryPoison = "poison"
)

// AlertDeliveryBreaker and AlertDeliveryPoison are the alert kinds of
// deliveries.
const (
	AlertDeliveryBreaker = "delivery_breaker_open"
	AlertDeliveryPoison  = "delivery_poison"
)

// DestinationSettings are what a Delivery workflow decides by, by
// reference to the destination's registry entry: name, kind, the registry
// revision they were read at and the tuning (internal/tuning). Where
// batches go and with which secret is never part of them: the delivery
// activities resolve the destination from the registry by name.
type DestinationSettings = tuning.Destination

// DeliveryInput starts a Delivery workflow, or continues one with its state.
type DeliveryInput struct {
	Destination DestinationSettings `json:"destination"`
	State       *DeliveryState      `json:"state,omitempty"`
	// MaxBatchesPerRun caps one run's history (0: the default); it travels
	// in the input so changing the default never changes a replay.
	MaxBatchesPerRun int `json:"max_batches_per_run,omitempty"`
	// Alerts are the previous run's undelivered alerts, sent again first.
	Alerts *AlertHandover `json:"alerts,omitempty"`
}

// DeliveryState is what a Delivery workflow carries over continue-as-new:
// sequence numbers and counts only, never order data.
type DeliveryState struct {
	// Acked is the highest seq the destination confirmed (or that was set
	// aside as poison): delivery resumes after it.
	Acked       int64  `json:"acked"`
	Paused      bool   `json:"paused,omitempty"`
	PauseReason string `json:"pause_reason,omitempty"`
	BreakerOpen bool   `json:"breaker_open,omitempty"`
	// ConsecutiveFailures counts batches that failed after all retries.
	ConsecutiveFailures int            `json:"consecutive_failures,omitempty"`
	Poison              []PoisonChange `json:"poison,omitempty"`
	// Retrying lists poison seqs an operator asked to deliver again.
	Retrying  []int64        `json:"retrying,omitempty"`
	Counts    DeliveryCounts `json:"counts"`
	LastError string         `json:"last_error,omitempty"`
	Runs      int            `json:"runs"`
	// Rejected counts refused signals.
	Rejected int `json:"rejected,omitempty"`
	// Pending is the range being delivered in lanes (max_in_flight > 1)
	// with the lanes not yet confirmed; Acked moves to its end once none
	// is left. Carried so a continue-as-new resends only those lanes.
	Pending *PendingRange `json:"pending,omitempty"`
}

// PendingRange is a range of the feed split into lanes: every change of
// one order in the range is in the same lane, each lane in seq order.
type PendingRange struct {
	SeqRange
	// Lanes is how many lanes the range was split into (the destination's
	// max_in_flight when it was listed).
	Lanes int `json:"lanes"`
	// Left are the lanes not yet confirmed.
	Left []LaneBatch `json:"left"`
}

// LaneBatch is one lane's share of a range: seqs only.
type LaneBatch struct {
	Lane int     `json:"lane"`
	Seqs []int64 `json:"seqs"`
}

// DeliveryCounts are running totals over the workflow's life.
type DeliveryCounts struct {
	Batches  int64 `json:"batches"`
	Changes  int64 `json:"changes"`
	Failures int64 `json:"failures"`
	Poisoned int64 `json:"poisoned"`
	Retried  int64 `json:"retried"`
	Skipped  int64 `json:"skipped"`
	// Bisected counts batches refused whole and delivered again one change
	// at a time.
	Bisected int64 `json:"bisected,omitempty"`
}

// PoisonChange is a change the destination refused in a way retrying
// cannot fix (a 4xx other than 408 and 429): set aside, so the changes
// behind it flow on, until an operator retries or skips it.
type PoisonChange struct {
	Seq int64 `json:"seq"`
	// Reason is the destination's status (e.g. "HTTP 422"), never its
	// body, which may echo order data.
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// DeliverySelector picks one set-aside change by seq, or all of them.
type DeliverySelector struct {
	Seq int64 `json:"seq,omitempty"`
	All bool  `json:"all,omitempty"`
}

// DeliveryStatus answers the status query.
type DeliveryStatus struct {
	Destination string        `json:"destination"`
	Kind        string        `json:"kind"`
	State       DeliveryState `json:"state"`
	// Waiting says why nothing is being delivered right now: "", "paused",
	// "breaker open", "outside work windows", "rate limit", "retry backoff"
	// or "feed empty".
	Waiting   string    `json:"waiting,omitempty"`
	WaitUntil time.Time `json:"wait_until,omitzero"`
	AsOf      time.Time `json:"as_of"`
	// Settings are the destination's settings in force.
	Settings DestinationSettings `json:"settings"`
	// InFlight is the seq range being delivered, if any.
	InFlight *SeqRange `json:"in_flight,omitempty"`
	// InFlightLanes counts the batches of InFlight being delivered at once
	// (max_in_flight > 1).
	InFlightLanes int `json:"in_flight_lanes,omitempty"`
	// AlertsPending counts alerts not yet delivered; AlertsDropped those
	// dropped at continue-as-new because too many waited.
	AlertsPending int   `json:"alerts_pending,omitempty"`
	AlertsDropped int64 `json:"alerts_dropped,omitempty"`
}

// SeqRange is the half-open range (After, To] of the change feed.
type SeqRange struct {
	After int64 `json:"after"`
	To    int64 `json:"to"`
}

// NextBatchRequest asks for the next batch after a seq.
type NextBatchRequest struct {
	Destination string `json:"destination"`
	After       int64  `json:"after"`
	Limit       int    `json:"limit"`
	// Wait is how long the activity may wait for a change when there is
	// none yet (long poll), so an idle destination writes little history.
	Wait time.Duration `json:"wait"`
	// Resume asks to continue after the seq the store recorded for the
	// destination when that is further: a Delivery workflow started anew
	// (after a terminate) then does not deliver everything again.
	Resume bool `json:"resume,omitempty"`
	// Lanes > 1 lists up to Lanes batches of up to Limit changes each,
	// split by order (NextBatchResult.Lanes); 0 or 1 lists one batch.
	Lanes int `json:"lanes,omitempty"`
	// OldestSetAside is the lowest seq on the poison list (0: none). The
	// store records the destination's acknowledgement below it, so
	// compaction keeps a set-aside change until it is retried or skipped,
	// and a Delivery started anew delivers it again.
	OldestSetAside int64 `json:"oldest_set_aside,omitempty"`
}

// NextBatchResult lists the seqs of the next batch (empty: none yet).
type NextBatchResult struct {
	// After is the seq the batch follows: the request's, or with Resume
	// the store's record when further.
	After int64   `json:"after"`
	Seqs  []int64 `json:"seqs,omitempty"`
	// To and Lanes answer a request with Lanes > 1: the range (After, To]
	// and its non-empty lanes, which together hold each of its changes
	// once. To is After when the feed has nothing yet.
	To    int64       `json:"to,omitempty"`
	Lanes []LaneBatch `json:"lanes,omitempty"`
}

// DeliverRequest delivers the destination's changes in (After, To].
type DeliverRequest struct {
	Destination string `json:"destination"`
	SeqRange
	// Expect is how many changes the range held when it was listed; the
	// activity fails if it reads fewer (compacted meanwhile).
	Expect int `json:"expect"`
	// Lane, Lanes and Seqs deliver one lane of a range split into Lanes
	// (max_in_flight > 1): only the listed seqs of (After, To], which
	// must number Expect.
	Lane  int     `json:"lane,omitempty"`
	Lanes int     `json:"lanes,omitempty"`
	Seqs  []int64 `json:"seqs,omitempty"`
}

// DeliverResult counts what was delivered.
type DeliverResult struct {
	Delivered int `json:"delivered"`
}
