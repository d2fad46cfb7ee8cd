package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"
)

// command is what a workflow asked the server for, with its content: the
// SDK's replayer compares only the type and order of commands with the
// recorded events (a child workflow's ID and input, a timer's duration and
// an activity's input are not compared), so the tests here compare these.
type command struct {
	Kind  string // child, activity, local-activity, timer, version, side-effect, continue-as-new
	Name  string // workflow or activity type, change ID
	ID    string // child workflow ID
	Queue string // task queue
	Input string // the arguments as the data converter encodes them
	Extra string // child policies and search attributes; a version's number; a timer's duration
}

func (c command) String() string {
	s := c.Kind + " " + c.Name
	for _, f := range []string{c.ID, c.Queue, c.Extra} {
		if f != "" {
			s += " " + f
		}
	}
	if c.Input != "" {
		s += " input=" + c.Input
	}
	return s
}

// commandRecorder is a worker interceptor that records the commands of
// the workflows of one type, in the order the code issues them.
type commandRecorder struct {
	interceptor.WorkerInterceptorBase
	workflowType string
	// at, when set, stamps each command with the workflow's clock (the
	// differential tests compare when, not only what).
	stamp bool
	cmds  []command
	// answer, when set, answers activities of these types itself after the
	// given workflow time instead of scheduling them. The test environment
	// runs mocked activities on goroutines and fires timers by wall-clock
	// time while any runs, which makes two runs that should be identical
	// differ by a few milliseconds under load.
	answer map[string]time.Duration
	// versions are the change IDs asked so far: the SDK records a marker
	// the first time a run asks for a change ID, and only then.
	versions map[string]bool
}

func (r *commandRecorder) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	in := &recordingInbound{rec: r, own: workflow.GetInfo(ctx).WorkflowType.Name == r.workflowType}
	in.Next = next
	return in
}

type recordingInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	rec *commandRecorder
	own bool
}

func (i *recordingInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	if !i.own {
		return i.Next.Init(outbound)
	}
	o := &recordingOutbound{rec: i.rec}
	o.Next = outbound
	return i.Next.Init(o)
}

type recordingOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	rec *commandRecorder
}

func (o *recordingOutbound) add(ctx workflow.Context, c command) {
	if o.rec.stamp {
		c.Extra = strings.TrimSpace(c.Extra + " at=" + workflow.Now(ctx).UTC().Format(time.RFC3339Nano))
	}
	o.rec.cmds = append(o.rec.cmds, c)
}

// ExecuteChildWorkflow records a child's search attributes in name order.
//
//workflowcheck:ignore
func (o *recordingOutbound) ExecuteChildWorkflow(ctx workflow.Context, childType string, args ...interface{}) workflow.ChildWorkflowFuture {
	opts := workflow.GetChildWorkflowOptions(ctx)
	sa := map[string]*commonpb.Payload{}
	for k, v := range opts.TypedSearchAttributes.GetUntypedValues() {
		p, err := converter.GetDefaultDataConverter().ToPayload(v)
		if err != nil {
			panic(err)
		}
		sa[k.GetName()] = p
	}
	o.add(ctx, command{Kind: "child", Name: childType, ID: opts.WorkflowID, Queue: opts.TaskQueue,
		Input: encodeArgs(args...), Extra: childExtra(opts.ParentClosePolicy, opts.WorkflowIDReusePolicy, sa)})
	return o.Next.ExecuteChildWorkflow(ctx, childType, args...)
}

func (o *recordingOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...interface{}) workflow.Future {
	opts := workflow.GetActivityOptions(ctx)
	o.add(ctx, command{Kind: "activity", Name: activityType, Queue: opts.TaskQueue, Input: encodeArgs(args...)})
	if d, ok := o.rec.answer[activityType]; ok {
		f, set := workflow.NewFuture(ctx)
		if d <= 0 {
			set.Set(nil, nil)
			return f
		}
		timer := o.Next.NewTimer(ctx, d) // not recorded: the cursor did not ask for it
		workflow.Go(ctx, func(ctx workflow.Context) {
			set.Set(nil, timer.Get(ctx, nil))
		})
		return f
	}
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}

func (o *recordingOutbound) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...interface{}) workflow.Future {
	o.add(ctx, command{Kind: "local-activity", Name: activityType})
	return o.Next.ExecuteLocalActivity(ctx, activityType, args...)
}

func (o *recordingOutbound) NewTimer(ctx workflow.Context, d time.Duration) workflow.Future {
	o.add(ctx, command{Kind: "timer", Extra: d.String()})
	return o.Next.NewTimer(ctx, d)
}

func (o *recordingOutbound) NewTimerWithOptions(ctx workflow.Context, d time.Duration, opts workflow.TimerOptions) workflow.Future {
	o.add(ctx, command{Kind: "timer", Extra: d.String()})
	return o.Next.NewTimerWithOptions(ctx, d, opts)
}

func (o *recordingOutbound) GetVersion(ctx workflow.Context, changeID string, minSupported, maxSupported workflow.Version) workflow.Version {
	v := o.Next.GetVersion(ctx, changeID, minSupported, maxSupported)
	if o.rec.versions == nil {
		o.rec.versions = map[string]bool{}
	}
	if v != workflow.DefaultVersion && !o.rec.versions[changeID] { // DefaultVersion leaves no marker
		o.add(ctx, command{Kind: "version", Name: changeID, Extra: fmt.Sprint(v)})
	}
	o.rec.versions[changeID] = true
	return v
}

func (o *recordingOutbound) SideEffect(ctx workflow.Context, f func(ctx workflow.Context) interface{}) converter.EncodedValue {
	o.add(ctx, command{Kind: "side-effect"})
	return o.Next.SideEffect(ctx, f)
}

func (o *recordingOutbound) NewContinueAsNewError(ctx workflow.Context, wfn interface{}, args ...interface{}) error {
	name, _ := wfn.(string)
	o.add(ctx, command{Kind: "continue-as-new", Name: name, Queue: workflow.GetInfo(ctx).TaskQueueName, Input: encodeArgs(args...)})
	return o.Next.NewContinueAsNewError(ctx, wfn, args...)
}

func encodeArgs(args ...interface{}) string {
	ps, err := converter.GetDefaultDataConverter().ToPayloads(args...)
	if err != nil {
		panic(err)
	}
	return payloadsString(ps)
}

func payloadsString(ps *commonpb.Payloads) string {
	var parts []string
	for _, p := range ps.GetPayloads() {
		parts = append(parts, string(p.GetData()))
	}
	return strings.Join(parts, " | ")
}

func childExtra(parentClose enumspb.ParentClosePolicy, reuse enumspb.WorkflowIdReusePolicy, sa map[string]*commonpb.Payload) string {
	keys := make([]string, 0, len(sa))
	for k := range sa {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := parentClose.String() + " " + reuse.String()
	for _, k := range keys {
		s += fmt.Sprintf(" %s=%s", k, sa[k].GetData())
	}
	return s
}

// recordedCommands reads the commands a history recorded, as events, in
// the shape commandRecorder gives them. Events the code does not ask for
// one by one (workflow tasks, search attributes GetVersion upserts, update
// protocol messages, timer cancellations, results) are left out; the SDK's
// replayer checks their order.
func recordedCommands(h *historypb.History) ([]command, *commonpb.Payloads) {
	var out []command
	var can *commonpb.Payloads
	for _, e := range h.GetEvents() {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes()
			out = append(out, command{Kind: "child", Name: a.GetWorkflowType().GetName(), ID: a.GetWorkflowId(),
				Queue: a.GetTaskQueue().GetName(), Input: payloadsString(a.GetInput()),
				Extra: childExtra(a.GetParentClosePolicy(), a.GetWorkflowIdReusePolicy(), a.GetSearchAttributes().GetIndexedFields())})
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := e.GetActivityTaskScheduledEventAttributes()
			out = append(out, command{Kind: "activity", Name: a.GetActivityType().GetName(), Queue: a.GetTaskQueue().GetName(), Input: payloadsString(a.GetInput())})
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			out = append(out, command{Kind: "timer", Extra: e.GetTimerStartedEventAttributes().GetStartToFireTimeout().AsDuration().String()})
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			a := e.GetMarkerRecordedEventAttributes()
			switch a.GetMarkerName() {
			case "Version":
				var id string
				var v workflow.Version
				mustDecode(a.GetDetails()["change-id"], &id)
				mustDecode(a.GetDetails()["version"], &v)
				out = append(out, command{Kind: "version", Name: id, Extra: fmt.Sprint(v)})
			case "SideEffect":
				out = append(out, command{Kind: "side-effect"})
			case "LocalActivity":
				var d struct{ ActivityType string }
				mustDecode(a.GetDetails()["data"], &d)
				out = append(out, command{Kind: "local-activity", Name: d.ActivityType})
			default:
				out = append(out, command{Kind: "marker " + a.GetMarkerName()})
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
			a := e.GetWorkflowExecutionContinuedAsNewEventAttributes()
			can = a.GetInput()
			out = append(out, command{Kind: "continue-as-new", Name: a.GetWorkflowType().GetName(), Queue: a.GetTaskQueue().GetName(), Input: payloadsString(can)})
		}
	}
	return out, can
}

func mustDecode(ps *commonpb.Payloads, v any) {
	if err := converter.GetDefaultDataConverter().FromPayloads(ps, v); err != nil {
		panic(err)
	}
}

// diffCommands describes the first difference between two command lists,
// or returns "" when they are equal. sameInput, when set, decides whether
// two inputs of the same command kind carry the same thing.
func diffCommands(want, got []command, sameInput func(kind, want, got string) error) string {
	for i := 0; i < max(len(want), len(got)); i++ {
		switch {
		case i >= len(want):
			return fmt.Sprintf("command %d is new:\n  %s", i, got[i])
		case i >= len(got):
			return fmt.Sprintf("command %d is missing:\n  %s", i, want[i])
		}
		w, g := want[i], got[i]
		if g.Kind == w.Kind && sameInput != nil {
			if err := sameInput(w.Kind, w.Input, g.Input); err != nil {
				return fmt.Sprintf("command %d, %s input: %v", i, w.Kind, err)
			}
			w.Input, g.Input = "", ""
		}
		if w != g {
			return fmt.Sprintf("command %d differs:\n  want %s\n  got  %s", i, w, g)
		}
	}
	return ""
}

// indentJSON is for messages only.
func indentJSON(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "  ", "  ") != nil {
		return s
	}
	return b.String()
}
