package tsetup

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ordersync/ordersync/internal/searchattr"
)

const day = 24 * time.Hour

// fakeServer is one namespace's state behind the two services; embedded
// nil interfaces make any call setup should not make panic.
type fakeServer struct {
	workflowservice.WorkflowServiceClient
	operatorservice.OperatorServiceClient
	exists    bool
	retention time.Duration
	attrs     map[string]enumspb.IndexedValueType
	// refuse makes namespace and attribute changes PermissionDenied (Cloud).
	refuse bool
	writes int
}

func (f *fakeServer) DescribeNamespace(_ context.Context, in *workflowservice.DescribeNamespaceRequest, _ ...grpc.CallOption) (*workflowservice.DescribeNamespaceResponse, error) {
	if !f.exists {
		return nil, serviceerror.NewNamespaceNotFound(in.GetNamespace())
	}
	return &workflowservice.DescribeNamespaceResponse{Config: &namespacepb.NamespaceConfig{WorkflowExecutionRetentionTtl: durationpb.New(f.retention)}}, nil
}

func (f *fakeServer) RegisterNamespace(_ context.Context, in *workflowservice.RegisterNamespaceRequest, _ ...grpc.CallOption) (*workflowservice.RegisterNamespaceResponse, error) {
	if f.refuse {
		return nil, status.Error(codes.PermissionDenied, "no")
	}
	f.writes++
	f.exists, f.retention = true, in.GetWorkflowExecutionRetentionPeriod().AsDuration()
	return &workflowservice.RegisterNamespaceResponse{}, nil
}

func (f *fakeServer) UpdateNamespace(_ context.Context, in *workflowservice.UpdateNamespaceRequest, _ ...grpc.CallOption) (*workflowservice.UpdateNamespaceResponse, error) {
	if f.refuse {
		return nil, status.Error(codes.PermissionDenied, "no")
	}
	f.writes++
	f.retention = in.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration()
	return &workflowservice.UpdateNamespaceResponse{}, nil
}

func (f *fakeServer) CountWorkflowExecutions(context.Context, *workflowservice.CountWorkflowExecutionsRequest, ...grpc.CallOption) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	return &workflowservice.CountWorkflowExecutionsResponse{}, nil
}

func (f *fakeServer) ListSearchAttributes(_ context.Context, in *operatorservice.ListSearchAttributesRequest, _ ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	if !f.exists {
		return nil, serviceerror.NewNamespaceNotFound(in.GetNamespace())
	}
	return &operatorservice.ListSearchAttributesResponse{CustomAttributes: f.attrs}, nil
}

func (f *fakeServer) AddSearchAttributes(_ context.Context, in *operatorservice.AddSearchAttributesRequest, _ ...grpc.CallOption) (*operatorservice.AddSearchAttributesResponse, error) {
	if f.refuse {
		return nil, status.Error(codes.PermissionDenied, "no")
	}
	f.writes++
	if f.attrs == nil {
		f.attrs = map[string]enumspb.IndexedValueType{}
	}
	for k, v := range in.GetSearchAttributes() {
		f.attrs[k] = v
	}
	return &operatorservice.AddSearchAttributesResponse{}, nil
}

func allAttrs() map[string]enumspb.IndexedValueType {
	m := map[string]enumspb.IndexedValueType{}
	for _, d := range searchattr.All {
		m[d.Name] = d.Type
	}
	return m
}

func states(r Report) map[string]string {
	m := map[string]string{}
	for _, s := range r.Steps {
		m[s.Item] = s.State
	}
	return m
}

func TestRun(t *testing.T) {
	tests := []struct {
		name      string
		server    fakeServer
		opts      Options
		wantErr   string
		want      map[string]string
		retention time.Duration // afterwards
		writes    int
		complete  bool
	}{
		{
			name:   "creates a missing namespace with every attribute",
			server: fakeServer{},
			want: map[string]string{"namespace": StateCreated, "retention": StateOK, "search attribute Platform": StateAdded,
				"search attribute SliceStart": StateAdded, "search attribute SliceState": StateAdded, "search attribute PlatformState": StateAdded},
			retention: 30 * day, writes: 2, complete: true,
		},
		{
			name:   "raises a short retention and adds the missing attribute",
			server: fakeServer{exists: true, retention: 3 * day, attrs: map[string]enumspb.IndexedValueType{"Platform": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "SliceState": enumspb.INDEXED_VALUE_TYPE_KEYWORD}},
			want: map[string]string{"namespace": StateOK, "retention": StateRaised, "search attribute Platform": StateOK,
				"search attribute SliceStart": StateAdded, "search attribute SliceState": StateOK, "search attribute PlatformState": StateAdded},
			retention: 30 * day, writes: 2, complete: true,
		},
		{
			name:   "never lowers a longer retention; nothing to do",
			server: fakeServer{exists: true, retention: 90 * day, attrs: allAttrs()},
			want: map[string]string{"namespace": StateOK, "retention": StateOK, "search attribute Platform": StateOK,
				"search attribute SliceStart": StateOK, "search attribute SliceState": StateOK, "search attribute PlatformState": StateOK},
			retention: 90 * day, complete: true,
		},
		{
			name:   "a check changes nothing and reports what is missing",
			server: fakeServer{exists: true, retention: day, attrs: map[string]enumspb.IndexedValueType{"Platform": enumspb.INDEXED_VALUE_TYPE_KEYWORD}},
			opts:   Options{DryRun: true},
			want: map[string]string{"namespace": StateOK, "retention": StateMissing, "search attribute Platform": StateOK,
				"search attribute SliceStart": StateMissing, "search attribute SliceState": StateMissing, "search attribute PlatformState": StateMissing},
			retention: day,
		},
		{
			name:   "a check of a missing namespace reports everything missing",
			server: fakeServer{},
			opts:   Options{DryRun: true},
			want: map[string]string{"namespace": StateMissing, "search attribute Platform": StateMissing,
				"search attribute SliceStart": StateMissing, "search attribute SliceState": StateMissing, "search attribute PlatformState": StateMissing},
		},
		{
			name:    "an attribute of another type is a conflict, not changed",
			server:  fakeServer{exists: true, retention: 30 * day, attrs: map[string]enumspb.IndexedValueType{"Platform": enumspb.INDEXED_VALUE_TYPE_TEXT, "SliceStart": enumspb.INDEXED_VALUE_TYPE_DATETIME, "SliceState": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "PlatformState": enumspb.INDEXED_VALUE_TYPE_KEYWORD}},
			wantErr: "search attribute Platform has another type",
			want: map[string]string{"namespace": StateOK, "retention": StateOK, "search attribute Platform": StateConflict,
				"search attribute SliceStart": StateOK, "search attribute SliceState": StateOK, "search attribute PlatformState": StateOK},
			retention: 30 * day,
		},
		{
			name:   "Cloud: a missing namespace is the operator's, with the tcld command",
			server: fakeServer{refuse: true},
			opts:   Options{Cloud: true},
			want: map[string]string{"namespace": StateMissing, "search attribute Platform": StateMissing,
				"search attribute SliceStart": StateMissing, "search attribute SliceState": StateMissing, "search attribute PlatformState": StateMissing},
		},
		{
			name:   "Cloud: retention and refused attributes are reported, not failed",
			server: fakeServer{exists: true, retention: 7 * day, refuse: true},
			opts:   Options{Cloud: true},
			want: map[string]string{"namespace": StateOK, "retention": StateMissing, "search attribute Platform": StateMissing,
				"search attribute SliceStart": StateMissing, "search attribute SliceState": StateMissing, "search attribute PlatformState": StateMissing},
			retention: 7 * day,
		},
		{
			name:    "self-hosted: a refused creation is an error that says so",
			server:  fakeServer{refuse: true},
			wantErr: "may not change namespaces here",
			want:    map[string]string{"namespace": StateMissing},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &tt.server
			opts := tt.opts
			opts.Namespace = "orders"
			r, err := Run(context.Background(), Services{Workflow: f, Operator: f}, opts)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tt.want, states(r))
			require.Equal(t, tt.retention, f.retention)
			require.Equal(t, tt.writes, f.writes, "writes to the server")
			require.Equal(t, tt.complete, r.Complete())
			require.Equal(t, tt.writes > 0, r.Changed())
			if opts.Cloud {
				for _, s := range r.Steps {
					if s.State == StateMissing {
						require.Contains(t, s.Manual, "tcld namespace", s.Item)
					}
				}
			}

			if err == nil && r.Complete() {
				// A second run finds everything in place and writes nothing.
				again, err := Run(context.Background(), Services{Workflow: f, Operator: f}, opts)
				require.NoError(t, err)
				require.False(t, again.Changed())
				require.Equal(t, tt.writes, f.writes)
			}
		})
	}
}

func TestMissingAttributes(t *testing.T) {
	tests := []struct {
		name    string
		server  fakeServer
		want    []string
		wantErr error
	}{
		{name: "all present", server: fakeServer{exists: true, attrs: allAttrs()}},
		{name: "no namespace", server: fakeServer{}, wantErr: ErrNoNamespace},
		{name: "one missing, one of another type", server: fakeServer{exists: true, attrs: map[string]enumspb.IndexedValueType{
			"Platform": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "SliceStart": enumspb.INDEXED_VALUE_TYPE_KEYWORD}},
			want: []string{"SliceStart", "SliceState", "PlatformState"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			missing, err := MissingAttributes(context.Background(), &tt.server, "orders", searchattr.All)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			var names []string
			for _, d := range missing {
				names = append(names, d.Name)
			}
			require.Equal(t, tt.want, names)
		})
	}
}

func TestIsNotFound(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{serviceerror.NewNamespaceNotFound("orders"), true},
		{status.Error(codes.NotFound, "gone"), true},
		// SQL visibility wraps the namespace lookup in Unavailable.
		{serviceerror.NewUnavailable("Unable to get namespace orders info with error: Namespace orders is not found."), true},
		{serviceerror.NewUnavailable("connection refused"), false},
		{nil, false},
	} {
		require.Equal(t, tt.want, isNotFound(tt.err), "%v", tt.err)
	}
}

func TestIsCloudAddress(t *testing.T) {
	for addr, want := range map[string]bool{
		"orders.a1b2c.tmprl.cloud:7233":      true,
		"us-east-1.aws.api.temporal.io:7233": true,
		"temporal.internal:7233":             false,
		"127.0.0.1:7233":                     false,
		"tmprl.cloud.example.com:7233":       false,
		"ORDERS.A1B2C.TMPRL.CLOUD:7233":      true,
		"eu-west-1.aws.api.temporal.io":      true,
		"api.temporal.io.attacker.test:7233": false,
	} {
		require.Equal(t, want, IsCloudAddress(addr), addr)
	}
}
