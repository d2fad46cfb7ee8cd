package e2e

import (
	"time"

	"github.com/ordersync/ordersync/sim"
)

// chaosReport is what a chaos run measured. `make chaos` writes it as JSON
// (ORDERSYNC_CHAOS_REPORT) so docs/reliability.md can quote a real run.
type chaosReport struct {
	When            time.Time     `json:"when"`
	Stack           string        `json:"stack"`
	Seed            int64         `json:"seed"`
	ChaosDuration   string        `json:"chaos_duration"`
	WallTime        string        `json:"wall_time"`
	WorkerProcesses int           `json:"worker_processes"`
	WorkerKills     int           `json:"worker_kills"`
	ServerRestarts  int           `json:"server_restarts"`
	ServerDowntime  string        `json:"server_downtime"`
	BreakerResumes  int           `json:"breaker_resumes"`
	FaultRates      sim.Faults    `json:"fault_rates"`
	SimRateLimit    sim.RateLimit `json:"sim_rate_limit"`
	Late            string        `json:"late"`
	Overlap         string        `json:"overlap"`
	// Served is what the simulator answered, summed over its shops.
	Served    chaosServed            `json:"served"`
	Platforms []*chaosPlatformReport `json:"platforms"`
	// Destinations is what each destination got (chaos_delivery_test.go).
	Destinations []*chaosDestinationReport `json:"destinations"`
}

// chaosServed counts the simulator's answers by kind.
type chaosServed struct {
	Requests      int64 `json:"requests"`
	Pages         int64 `json:"pages"`
	OrdersServed  int64 `json:"orders_served"`
	RateLimited   int64 `json:"rate_limited_429"`
	Err5xx        int64 `json:"err_5xx"`
	Hang          int64 `json:"hang"`
	Malformed     int64 `json:"malformed"`
	EmptyPage     int64 `json:"empty_page"`
	OrdersCreated int   `json:"orders_created"`
	Versions      int64 `json:"versions"`
}

// chaosPlatformReport is one platform's outcome: verify's counts and the
// cursor's.
type chaosPlatformReport struct {
	Platform        string    `json:"platform"`
	Truth           int       `json:"orders_in_ground_truth"`
	Checked         int       `json:"orders_checked"`
	Missing         int       `json:"missing"`
	Stale           int       `json:"stale"`
	Extra           int       `json:"extra"`
	VerifyExit      int       `json:"verify_exit_code"`
	DeadLettered    int       `json:"dead_lettered"`
	Reprocessed     int       `json:"dead_letters_reprocessed"`
	SlicesCompleted int64     `json:"slices_completed"`
	SlicesFailed    int64     `json:"slices_failed"`
	SlicesSplit     int64     `json:"slices_split"`
	Pages           int64     `json:"pages"`
	CursorRuns      int       `json:"cursor_continue_as_new"`
	Watermark       time.Time `json:"watermark"`
}

func (r *chaosReport) platform(name string) *chaosPlatformReport {
	for _, p := range r.Platforms {
		if p.Platform == name {
			return p
		}
	}
	p := &chaosPlatformReport{Platform: name}
	r.Platforms = append(r.Platforms, p)
	return p
}

func (r *chaosReport) collectSim(st sim.Stats) {
	var s chaosServed
	for _, sh := range st.Shops {
		s.Requests += sh.Requests
		s.Pages += sh.Pages
		s.OrdersServed += sh.OrdersServed
		s.RateLimited += sh.RateLimited
		s.Err5xx += sh.Faults.Err5xx
		s.Hang += sh.Faults.Hang
		s.Malformed += sh.Faults.Malformed
		s.EmptyPage += sh.Faults.EmptyPage
		s.OrdersCreated += sh.Orders
		s.Versions += sh.Versions
	}
	r.Served = s
}
