package metrics

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
)

// pollAccepted is how long a poll must stay open, or return without error,
// before it counts: a server that refuses polls (wrong namespace, a key
// without worker permissions) answers at once, while one that accepted the
// poller holds a long poll open until a task comes.
var pollAccepted = time.Second

// Readiness says whether this process's workers are polling Temporal, for
// /readyz. A worker takes no inbound traffic, so readiness is what makes a
// rolling update wait until new pods really take work before old ones go,
// and what a PodDisruptionBudget counts: ready means every task queue the
// process serves has a workflow and an activity poll accepted by the server,
// and the process is neither draining nor stopped by a fatal worker error.
// A nil *Readiness is never ready.
type Readiness struct {
	mu     sync.Mutex
	queues []string
	polled map[string]*pollKinds
	down   string
}

type pollKinds struct{ workflow, activity bool }

// Expect sets the task queues this process's workers serve.
func (r *Readiness) Expect(queues []string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queues = append([]string(nil), queues...)
	sort.Strings(r.queues)
}

// Down marks the process not ready for good (draining, a worker stopped);
// the first reason is kept.
func (r *Readiness) Down(reason string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down == "" {
		r.down = reason
	}
}

// Check is nil when ready, else an error saying what is missing.
func (r *Readiness) Check() error {
	if r == nil {
		return fmt.Errorf("no workers")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down != "" {
		return fmt.Errorf("%s", r.down)
	}
	if len(r.queues) == 0 {
		return fmt.Errorf("no task-queue worker started yet")
	}
	var missing []string
	for _, q := range r.queues {
		k := r.polled[q]
		switch {
		case k == nil || (!k.workflow && !k.activity):
			missing = append(missing, q+": no poll accepted yet")
		case !k.workflow:
			missing = append(missing, q+": no workflow-task poll accepted yet")
		case !k.activity:
			missing = append(missing, q+": no activity-task poll accepted yet")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("task queue %s", strings.Join(missing, "; task queue "))
	}
	return nil
}

func (r *Readiness) saw(queue string, workflow bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.polled == nil {
		r.polled = map[string]*pollKinds{}
	}
	k := r.polled[queue]
	if k == nil {
		k = &pollKinds{}
		r.polled[queue] = k
	}
	if workflow {
		k.workflow = true
	} else {
		k.activity = true
	}
}

// UnaryClientInterceptor watches the client's poll requests: a poll that
// returned without error, or that the server still holds after
// pollAccepted, marks its task queue as polled. Add it to the client's
// dial options (Recorder.InstrumentClient does).
func (r *Readiness) UnaryClientInterceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		var queue string
		var workflow bool
		switch p := req.(type) {
		case *workflowservice.PollWorkflowTaskQueueRequest:
			queue, workflow = p.GetTaskQueue().GetName(), true
		case *workflowservice.PollActivityTaskQueueRequest:
			queue = p.GetTaskQueue().GetName()
		default:
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		held := time.AfterFunc(pollAccepted, func() { r.saw(queue, workflow) })
		err := invoker(ctx, method, req, reply, cc, opts...)
		if held.Stop() && err == nil {
			r.saw(queue, workflow)
		}
		return err
	}
}

// ServeHTTP answers 200 when ready, 503 with the reason otherwise.
func (r *Readiness) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := r.Check(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "not ready: %v\n", err)
		return
	}
	r.mu.Lock()
	queues := strings.Join(r.queues, ", ")
	r.mu.Unlock()
	fmt.Fprintf(w, "ready: polling %s\n", queues)
}
