package workflows_test

import (
	"testing"
	"time"

	"github.com/ordersync/ordersync/workflows"
)

func TestSmoke(t *testing.T) {
	env := newEnv(t)
	var log pageLog
	onePage(env, &log)
	stopAt(env, 30*time.Minute, func() { t.Logf("status %+v", status(t, env)) })
	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, testPlatform(t)))
	t.Logf("err %v", env.GetWorkflowError())
	for _, c := range log.all() {
		t.Logf("%s %s", c.At, c.In.SliceID)
	}
}
