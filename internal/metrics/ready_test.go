package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
)

// poll runs one request through the readiness interceptor with an invoker
// that answers err after delay.
func poll(t *testing.T, r *Readiness, req any, delay time.Duration, err error) {
	t.Helper()
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
		time.Sleep(delay)
		return err
	}
	got := r.UnaryClientInterceptor()(context.Background(), "/poll", req, nil, nil, invoker)
	require.Equal(t, err, got, "the interceptor passes the answer through")
}

func wfPoll(q string) *workflowservice.PollWorkflowTaskQueueRequest {
	return &workflowservice.PollWorkflowTaskQueueRequest{TaskQueue: &taskqueuepb.TaskQueue{Name: q}}
}

func actPoll(q string) *workflowservice.PollActivityTaskQueueRequest {
	return &workflowservice.PollActivityTaskQueueRequest{TaskQueue: &taskqueuepb.TaskQueue{Name: q}}
}

func TestReadiness(t *testing.T) {
	prev := pollAccepted
	pollAccepted = 50 * time.Millisecond
	t.Cleanup(func() { pollAccepted = prev })
	refused := errors.New("permission denied")

	tests := []struct {
		name    string
		expect  []string
		polls   func(t *testing.T, r *Readiness)
		down    string
		wantErr string // empty: ready
	}{
		{name: "nothing started", wantErr: "no task-queue worker started yet"},
		{name: "started, no poll yet", expect: []string{"orders-a"}, wantErr: "orders-a: no poll accepted yet"},
		{
			name: "polls answered on every queue", expect: []string{"orders-a", "orders-b"},
			polls: func(t *testing.T, r *Readiness) {
				for _, q := range []string{"orders-a", "orders-b"} {
					poll(t, r, wfPoll(q), 0, nil)
					poll(t, r, actPoll(q), 0, nil)
				}
			},
		},
		{
			name: "a long poll the server holds counts", expect: []string{"orders-a"},
			polls: func(t *testing.T, r *Readiness) {
				poll(t, r, wfPoll("orders-a"), 120*time.Millisecond, context.DeadlineExceeded)
				poll(t, r, actPoll("orders-a"), 120*time.Millisecond, nil)
			},
		},
		{
			name: "polls refused at once do not count", expect: []string{"orders-a"},
			polls: func(t *testing.T, r *Readiness) {
				poll(t, r, wfPoll("orders-a"), 0, refused)
				poll(t, r, actPoll("orders-a"), 0, nil)
			},
			wantErr: "orders-a: no workflow-task poll accepted yet",
		},
		{
			name: "one queue without activity polls", expect: []string{"orders-a", "orders-b"},
			polls: func(t *testing.T, r *Readiness) {
				poll(t, r, wfPoll("orders-a"), 0, nil)
				poll(t, r, actPoll("orders-a"), 0, nil)
				poll(t, r, wfPoll("orders-b"), 0, nil)
				poll(t, r, &workflowservice.DescribeNamespaceRequest{}, 0, nil) // not a poll
			},
			wantErr: "orders-b: no activity-task poll accepted yet",
		},
		{
			name: "draining is not ready", expect: []string{"orders-a"},
			polls: func(t *testing.T, r *Readiness) {
				poll(t, r, wfPoll("orders-a"), 0, nil)
				poll(t, r, actPoll("orders-a"), 0, nil)
			},
			down: "draining", wantErr: "draining",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Readiness{}
			if tc.expect != nil {
				r.Expect(tc.expect)
			}
			if tc.polls != nil {
				tc.polls(t, r)
			}
			if tc.down != "" {
				r.Down(tc.down)
			}
			err := r.Check()
			if tc.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tc.wantErr)
			}
		})
	}
}

func TestReadyzEndpoint(t *testing.T) {
	rec := New()
	srv, err := rec.Serve("127.0.0.1:0", nil)
	require.NoError(t, err)
	defer srv.Close()
	url := "http://" + srv.Addr() + "/readyz"
	get := func() (int, string) {
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}

	code, body := get()
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "not ready: no task-queue worker started yet", body)

	rec.Readiness().Expect([]string{"orders-a"})
	poll(t, rec.Readiness(), wfPoll("orders-a"), 0, nil)
	poll(t, rec.Readiness(), actPoll("orders-a"), 0, nil)
	code, body = get()
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ready: polling orders-a", body)

	rec.Readiness().Down("draining")
	code, _ = get()
	require.Equal(t, http.StatusServiceUnavailable, code)

	var none *Recorder
	require.Error(t, none.Readiness().Check(), "no recorder, no workers")
}
