// Package deploy_test checks the deployment files in this directory against
// the code: they cannot be run here (no Docker, no cluster), so each fact
// they state about ordersync (a command, a flag, an ORDERSYNC_* variable, a
// port, a path, a version) is compared with what the code says.
package deploy_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	"go.temporal.io/server/common/dynamicconfig"
	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/ordersync/ordersync/cli"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/internal/promtest"
	"github.com/ordersync/ordersync/worker"
)

// processEnv maps every ORDERSYNC_* variable config.Process reads (from its
// envconfig tags) to its default.
func processEnv(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	typ := reflect.TypeFor[config.Process]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, ok := f.Tag.Lookup("envconfig")
		require.True(t, ok, "config.Process.%s has no envconfig tag", f.Name)
		out[config.EnvPrefix+"_"+name] = f.Tag.Get("default")
	}
	require.Contains(t, out, "ORDERSYNC_METRICS_ADDRESS")
	return out
}

// defaultPort is the port of an ORDERSYNC_* address variable's default.
func defaultPort(t *testing.T, variable string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(processEnv(t)[variable])
	require.NoError(t, err, variable)
	return port
}

// checkEnv proves a container's environment is one ordersync reads: every
// ORDERSYNC_* name is a config.Process setting, the values load (secret
// references are left to their defaults), and the addresses use the
// default ports.
func checkEnv(t *testing.T, where string, env map[string]string) {
	t.Helper()
	known := processEnv(t)
	for name, value := range env {
		if !strings.HasPrefix(name, config.EnvPrefix+"_") {
			continue
		}
		require.Contains(t, known, name, "%s: %s is not a variable config.Process reads", where, name)
		t.Setenv(name, value)
	}
	p, err := config.LoadProcess()
	require.NoError(t, err, "%s: the environment does not load", where)
	require.NoError(t, config.ValidateDeployment(p.DeploymentName, expandDefault(p.BuildID), config.DeploymentSettings), where)
	require.True(t, p.Versioned(), "%s: the workers run unversioned; set ORDERSYNC_DEPLOYMENT_NAME and ORDERSYNC_BUILD_ID (docs/production.md, \"Rolling upgrades\")", where)
	for _, v := range []string{"ORDERSYNC_METRICS_ADDRESS", "ORDERSYNC_TEMPORAL_ADDRESS"} {
		addr, ok := env[v]
		require.True(t, ok, "%s: %s is not set (its default listens on / dials loopback only)", where, v)
		_, port, err := net.SplitHostPort(addr)
		require.NoError(t, err, "%s: %s", where, v)
		require.Equal(t, defaultPort(t, v), port, "%s: %s uses another port than the default", where, v)
	}
}

// expandDefault resolves compose's ${VARIABLE:-default} to its default.
func expandDefault(v string) string {
	if m := regexp.MustCompile(`^\$\{[A-Z0-9_]+:-(.*)\}$`).FindStringSubmatch(v); m != nil {
		return m[1]
	}
	return v
}

// command finds the ordersync subcommand args name and parses its flags,
// failing on an unknown command, flag or argument.
func command(t *testing.T, where string, args []string) *cobra.Command {
	t.Helper()
	root := cli.NewRootCommand(&cli.App{})
	cmd, rest, err := root.Find(args)
	require.NoError(t, err, "%s: %q", where, args)
	require.NotEqual(t, root, cmd, "%s: %q names no subcommand", where, args)
	require.NoError(t, cmd.ParseFlags(rest), "%s: %q", where, args)
	require.NoError(t, cmd.ValidateArgs(cmd.Flags().Args()), "%s: %q", where, args)
	return cmd
}

// stopTimeout is the worker's --stop-timeout as the command line sets it.
func stopTimeout(t *testing.T, cmd *cobra.Command) time.Duration {
	t.Helper()
	require.Equal(t, "worker", cmd.Name())
	d, err := cmd.Flags().GetDuration("stop-timeout")
	require.NoError(t, err)
	if !cmd.Flags().Changed("stop-timeout") {
		require.Equal(t, worker.DefaultStopTimeout, d)
	}
	return d
}

// checkPlatforms proves a platforms file loads and that the credential
// variables it names are set in env.
func checkPlatforms(t *testing.T, where string, body []byte, env map[string]string) *config.File {
	t.Helper()
	f, err := config.Parse(body)
	require.NoError(t, err, "%s: platforms file", where)
	require.NotEmpty(t, f.Platforms, where)
	for _, p := range f.Platforms {
		if p.Credentials.Env != "" && env != nil {
			require.Contains(t, env, p.Credentials.Env, "%s: platform %s reads its secret from %s, which is not set", where, p.Name, p.Credentials.Env)
		}
		require.False(t, strings.HasPrefix(p.Credentials.Env, config.EnvPrefix+"_"),
			"%s: platform %s: keep ORDERSYNC_ for process settings", where, p.Name)
	}
	return f
}

// served proves the code serves path on the metrics server (any answer but 404).
func served(t *testing.T, path string) {
	t.Helper()
	srv, err := metrics.New().Serve("127.0.0.1:0", nil)
	require.NoError(t, err)
	defer srv.Close()
	resp, err := http.Get("http://" + srv.Addr() + path)
	require.NoError(t, err)
	resp.Body.Close()
	require.NotEqual(t, http.StatusNotFound, resp.StatusCode, "the worker's metrics server does not serve %s", path)
}

// goModVersion is the version go.mod requires of module.
func goModVersion(t *testing.T, module string) string {
	t.Helper()
	b, err := os.ReadFile("../go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(module) + `\s+v(\S+)`).FindSubmatch(b)
	require.NotNil(t, m, "go.mod does not require %s", module)
	return string(m[1])
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, v), path)
}

type composeService struct {
	Image string `yaml:"image"`
	Build struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Command         []string          `yaml:"command"`
	Entrypoint      []string          `yaml:"entrypoint"`
	Environment     map[string]string `yaml:"environment"`
	Volumes         []string          `yaml:"volumes"`
	Ports           []string          `yaml:"ports"`
	StopGracePeriod string            `yaml:"stop_grace_period"`
}

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

// mounts maps each bind mount's container path to its path here.
func (s composeService) mounts() map[string]string {
	out := map[string]string{}
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if strings.HasPrefix(parts[0], ".") {
			out[parts[1]] = filepath.Clean(parts[0])
		}
	}
	return out
}

func TestComposeAgreesWithCode(t *testing.T) {
	var c composeFile
	readYAML(t, "compose.yaml", &c)
	for _, name := range []string{"postgresql", "temporal", "temporal-ui", "worker", "cursors", "prometheus", "grafana"} {
		require.Contains(t, c.Services, name)
	}

	t.Run("ordersync services", func(t *testing.T) {
		for name, s := range c.Services {
			if !strings.HasPrefix(s.Image, "ordersync:") {
				continue
			}
			require.FileExists(t, filepath.Join(s.Build.Context, s.Build.Dockerfile), name)
			command(t, "compose service "+name, s.Command)
			if s.Environment != nil {
				checkEnv(t, "compose service "+name, s.Environment)
				file, ok := s.mounts()[s.Environment["ORDERSYNC_PLATFORMS_FILE"]]
				require.True(t, ok, "%s: ORDERSYNC_PLATFORMS_FILE is not mounted", name)
				body, err := os.ReadFile(file)
				require.NoError(t, err)
				checkPlatforms(t, "compose service "+name, body, s.Environment)
			}
		}
	})

	t.Run("the build ID is the image tag", func(t *testing.T) {
		w := c.Services["worker"]
		tag, ok := strings.CutPrefix(w.Image, "ordersync:")
		require.True(t, ok)
		require.Equal(t, w.Environment["ORDERSYNC_BUILD_ID"], tag, "an upgrade sets one and must set the other")
		promote := command(t, "promote", c.Services["promote"].Command)
		require.Equal(t, "set-current", promote.Name(), "the promote service makes the workers' build current")
	})

	t.Run("worker drains within its grace period", func(t *testing.T) {
		w := c.Services["worker"]
		grace, err := time.ParseDuration(w.StopGracePeriod)
		require.NoError(t, err, "stop_grace_period")
		require.Greater(t, grace, stopTimeout(t, command(t, "worker", w.Command)))
	})

	t.Run("the simulator serves the demo platforms", func(t *testing.T) {
		cmd := command(t, "sim", c.Services["sim"].Command)
		listen, err := cmd.Flags().GetString("listen")
		require.NoError(t, err)
		_, port, err := net.SplitHostPort(listen)
		require.NoError(t, err)
		// --shops is a func flag, which keeps no value to read back.
		args := c.Services["sim"].Command
		at := slices.Index(args, "--shops")
		require.Positive(t, at, "the simulator's shops are not set")
		shops := map[string]string{} // name -> token
		for _, s := range strings.Split(args[at+1], ",") {
			name, token, _ := strings.Cut(s, ":")
			shops[name] = token
		}
		w := c.Services["worker"]
		body, err := os.ReadFile("platforms.yaml")
		require.NoError(t, err)
		for _, p := range checkPlatforms(t, "platforms.yaml", body, w.Environment).Platforms {
			require.Equal(t, "http://sim:"+port+"/shops/"+strings.TrimPrefix(p.Name, "sim-"), p.Endpoint, p.Name)
			require.Equal(t, shops[strings.TrimPrefix(p.Name, "sim-")], w.Environment[p.Credentials.Env], "%s: token", p.Name)
		}
	})

	t.Run("Temporal runs the versions the tests run", func(t *testing.T) {
		server := goModVersion(t, "go.temporal.io/server")
		for _, name := range []string{"temporal", "temporal-schema"} {
			require.Regexp(t, `:\$\{TEMPORAL_VERSION:-`+regexp.QuoteMeta(server)+`\}$`, c.Services[name].Image, name)
		}
		require.Equal(t, []string{"setup"}, c.Services["temporal-setup"].Command, "the namespace is set up by ordersync setup")
		require.Regexp(t, `:\$\{TEMPORAL_UI_VERSION:-`+regexp.QuoteMeta(goModVersion(t, "github.com/temporalio/ui-server/v2"))+`\}$`,
			c.Services["temporal-ui"].Image)
		require.Equal(t, defaultPort(t, "ORDERSYNC_TEMPORAL_ADDRESS"), strings.Split(c.Services["temporal"].Ports[0], ":")[2])
		dyn := c.Services["temporal"].Environment["DYNAMIC_CONFIG_FILE_PATH"]
		require.Equal(t, "temporal/dynamicconfig.yaml", c.Services["temporal"].mounts()["/etc/temporal/"+dyn])
	})

	t.Run("bind mounts exist and ports stay on loopback", func(t *testing.T) {
		for name, s := range c.Services {
			for _, host := range s.mounts() {
				_, err := os.Stat(host)
				require.NoError(t, err, "%s mounts %s", name, host)
			}
			for _, p := range s.Ports {
				require.True(t, strings.HasPrefix(p, "127.0.0.1:"), "%s publishes %s beyond loopback", name, p)
			}
		}
	})

	t.Run("Prometheus and Grafana get their files", func(t *testing.T) {
		prom := c.Services["prometheus"]
		require.Contains(t, prom.Command, "--config.file=/etc/prometheus/prometheus.yml")
		require.Equal(t, "prometheus", prom.mounts()["/etc/prometheus"])

		g := c.Services["grafana"]
		require.Equal(t, filepath.Join("grafana", "provisioning"), g.mounts()["/etc/grafana/provisioning"])
		var providers struct {
			Providers []struct {
				Options struct {
					Path string `yaml:"path"`
				} `yaml:"options"`
			} `yaml:"providers"`
		}
		readYAML(t, "grafana/provisioning/dashboards/ordersync.yaml", &providers)
		require.Len(t, providers.Providers, 1)
		dir := providers.Providers[0].Options.Path
		require.Equal(t, filepath.Join("grafana", "dashboards"), g.mounts()[dir], "the dashboard provider reads %s, which compose does not mount", dir)
		home := g.Environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
		require.Equal(t, dir, filepath.Dir(home))
		require.FileExists(t, filepath.Join("grafana", "dashboards", filepath.Base(home)))

		var ds struct {
			Datasources []struct {
				Type, URL string
				IsDefault bool `yaml:"isDefault"`
			} `yaml:"datasources"`
		}
		readYAML(t, "grafana/provisioning/datasources/prometheus.yaml", &ds)
		require.Len(t, ds.Datasources, 1)
		require.Equal(t, "prometheus", ds.Datasources[0].Type)
		require.True(t, ds.Datasources[0].IsDefault, "the dashboard's datasource variable picks the default")
		require.Equal(t, "http://prometheus:"+strings.Split(prom.Ports[0], ":")[2], ds.Datasources[0].URL)
	})
}

type scrapeConfig struct {
	JobName      string `yaml:"job_name"`
	DNSSDConfigs []struct {
		Names []string
		Port  int
	} `yaml:"dns_sd_configs"`
}

func TestPrometheusScrapesTheWorkers(t *testing.T) {
	var cfg struct {
		RuleFiles     []string       `yaml:"rule_files"`
		ScrapeConfigs []scrapeConfig `yaml:"scrape_configs"`
	}
	readYAML(t, "prometheus/prometheus.yml", &cfg)
	require.Contains(t, cfg.RuleFiles, "rules.yml")
	require.FileExists(t, "prometheus/rules.yml")
	var c composeFile
	readYAML(t, "compose.yaml", &c)
	i := slices.IndexFunc(cfg.ScrapeConfigs, func(s scrapeConfig) bool { return s.JobName == "ordersync" })
	require.GreaterOrEqual(t, i, 0, `no scrape job "ordersync" (the rules select job="ordersync")`)
	job := cfg.ScrapeConfigs[i]
	require.Len(t, job.DNSSDConfigs, 1)
	require.Equal(t, []string{"worker"}, job.DNSSDConfigs[0].Names)
	require.Contains(t, c.Services, "worker")
	require.Equal(t, defaultPort(t, "ORDERSYNC_METRICS_ADDRESS"), strconv.Itoa(job.DNSSDConfigs[0].Port))
}

// readK8s decodes a manifest strictly: a misspelt field fails.
func readK8s(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("kubernetes", name))
	require.NoError(t, err)
	require.NoError(t, k8syaml.UnmarshalStrict(b, v), name)
}

// benchWorker is the worker process the benchmark measured at scale (B4).
type benchWorker struct {
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	CPUCores   float64 `json:"cpu_cores"`
}

func TestKubernetesAgreesWithCode(t *testing.T) {
	var dep appsv1.Deployment
	readK8s(t, "deployment.yaml", &dep)
	pod := dep.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	ctr := pod.Containers[0]
	env := map[string]string{}
	for _, e := range ctr.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			// The downward API: a label of the pod template, read as the
			// value here.
			label, ok := strings.CutPrefix(e.ValueFrom.FieldRef.FieldPath, "metadata.labels['")
			require.True(t, ok, "%s: only pod labels are read from the downward API", e.Name)
			label = strings.TrimSuffix(label, "']")
			require.Contains(t, dep.Spec.Template.Labels, label, "%s reads a label the pod does not have", e.Name)
			env[e.Name] = dep.Spec.Template.Labels[label]
		default:
			require.NotNil(t, e.ValueFrom.SecretKeyRef, e.Name)
			require.Contains(t, processEnv(t), e.Name, "%s from a secret is not a variable config.Process reads", e.Name)
		}
	}
	metricsPort := defaultPort(t, "ORDERSYNC_METRICS_ADDRESS")

	t.Run("command, flags and environment", func(t *testing.T) {
		require.Empty(t, ctr.Command, "keep the image's entrypoint (the ordersync binary)")
		cmd := command(t, "deployment", ctr.Args)
		checkEnv(t, "deployment", env)
		grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
		require.Greater(t, grace, stopTimeout(t, cmd), "terminationGracePeriodSeconds must let running activities finish")
	})

	t.Run("metrics port, probes, scrape annotations", func(t *testing.T) {
		require.Len(t, ctr.Ports, 1)
		require.Equal(t, "metrics", ctr.Ports[0].Name)
		require.Equal(t, metricsPort, strconv.Itoa(int(ctr.Ports[0].ContainerPort)))
		for _, probe := range []*corev1.Probe{ctr.ReadinessProbe, ctr.LivenessProbe} {
			require.NotNil(t, probe)
			require.Equal(t, "metrics", probe.HTTPGet.Port.String())
			require.Equal(t, "/readyz", probe.HTTPGet.Path)
			served(t, probe.HTTPGet.Path)
		}
		ann := dep.Spec.Template.Annotations
		require.Equal(t, metricsPort, ann["prometheus.io/port"])
		served(t, ann["prometheus.io/path"])
		require.Equal(t, int32(0), dep.Spec.Strategy.RollingUpdate.MaxUnavailable.IntVal, "a rollout must not drop below the ready workers")
	})

	t.Run("platforms file", func(t *testing.T) {
		var cm corev1.ConfigMap
		readK8s(t, "platforms.yaml", &cm)
		require.Len(t, pod.Volumes, 1)
		require.Equal(t, cm.Name, pod.Volumes[0].ConfigMap.Name)
		require.Len(t, ctr.VolumeMounts, 1)
		key := filepath.Base(env["ORDERSYNC_PLATFORMS_FILE"])
		require.Equal(t, ctr.VolumeMounts[0].MountPath, filepath.Dir(env["ORDERSYNC_PLATFORMS_FILE"]))
		require.Empty(t, ctr.VolumeMounts[0].SubPath, "a subPath mount never sees ConfigMap updates")
		require.Contains(t, cm.Data, key)
		checkPlatforms(t, "kubernetes/platforms.yaml", []byte(cm.Data[key]), nil)
	})

	t.Run("resources from the benchmark", func(t *testing.T) {
		b, err := os.ReadFile("../bench/results/latest.json")
		require.NoError(t, err)
		var latest struct {
			B4 struct {
				Worker benchWorker `json:"worker_process"`
			} `json:"b4_scale"`
		}
		require.NoError(t, json.Unmarshal(b, &latest))
		measured := latest.B4.Worker
		require.Positive(t, measured.PeakRSSMiB)
		mib := func(q resource.Quantity) float64 { return float64(q.Value()) / (1 << 20) }
		req, limit := ctr.Resources.Requests, ctr.Resources.Limits
		require.Greater(t, mib(req[corev1.ResourceMemory]), measured.PeakRSSMiB*1.1, "memory request below the measured peak RSS plus 10%%")
		require.GreaterOrEqual(t, mib(limit[corev1.ResourceMemory]), measured.PeakRSSMiB*1.5, "memory limit")
		require.GreaterOrEqual(t, req.Cpu().AsApproximateFloat64(), measured.CPUCores, "cpu request below the measured cores")
		require.True(t, limit.Cpu().IsZero(), "no CPU limit: throttling stalls polls and heartbeats")
		goMemLimit, ok := strings.CutSuffix(env["GOMEMLIMIT"], "MiB")
		require.True(t, ok, "GOMEMLIMIT in MiB")
		gml, err := strconv.ParseFloat(goMemLimit, 64)
		require.NoError(t, err)
		require.Less(t, gml, mib(limit[corev1.ResourceMemory]))
		require.Greater(t, gml, mib(req[corev1.ResourceMemory]))
	})

	t.Run("disruption budget and service select the workers", func(t *testing.T) {
		var pdb policyv1.PodDisruptionBudget
		readK8s(t, "pdb.yaml", &pdb)
		require.Equal(t, dep.Spec.Selector.MatchLabels, pdb.Spec.Selector.MatchLabels)
		require.Less(t, pdb.Spec.MaxUnavailable.IntValue(), int(*dep.Spec.Replicas))
		var svc corev1.Service
		readK8s(t, "service.yaml", &svc)
		require.Equal(t, dep.Spec.Selector.MatchLabels, svc.Spec.Selector)
		require.Equal(t, "metrics", svc.Spec.Ports[0].TargetPort.String())
		require.Equal(t, metricsPort, strconv.Itoa(int(svc.Spec.Ports[0].Port)))
		require.Subset(t, dep.Spec.Template.Labels, dep.Spec.Selector.MatchLabels)
	})

	t.Run("kustomization and pod monitor", func(t *testing.T) {
		var k struct {
			Resources []string `yaml:"resources"`
		}
		readYAML(t, "kubernetes/kustomization.yaml", &k)
		files, err := filepath.Glob("kubernetes/*.yaml")
		require.NoError(t, err)
		for _, f := range files {
			name := filepath.Base(f)
			if name == "kustomization.yaml" || name == "podmonitor.yaml" {
				continue
			}
			require.Contains(t, k.Resources, name, "kustomization.yaml leaves %s out", name)
		}
		var pm struct {
			Spec struct {
				JobLabel string `yaml:"jobLabel"`
				Selector struct {
					MatchLabels map[string]string `yaml:"matchLabels"`
				} `yaml:"selector"`
				Endpoints []struct {
					Port string `yaml:"port"`
					Path string `yaml:"path"`
				} `yaml:"podMetricsEndpoints"`
			} `yaml:"spec"`
		}
		readYAML(t, "kubernetes/podmonitor.yaml", &pm)
		require.Equal(t, dep.Spec.Selector.MatchLabels, pm.Spec.Selector.MatchLabels)
		require.Equal(t, "ordersync", dep.Spec.Template.Labels[pm.Spec.JobLabel], `the job must be "ordersync" for the rules`)
		require.Equal(t, "metrics", pm.Spec.Endpoints[0].Port)
		served(t, pm.Spec.Endpoints[0].Path)
	})
}

func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	require.NoError(t, err)
	df := string(b)
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(mustRead(t, "../go.mod"))
	require.NotNil(t, m)
	require.Contains(t, df, "FROM golang:"+m[1]+"-", "the build stage's Go is not go.mod's")
	require.Contains(t, df, "go build -trimpath -o /out/ordersync ./cmd/ordersync")
	require.DirExists(t, "../cmd/ordersync")
	require.Contains(t, df, `ENTRYPOINT ["/usr/local/bin/ordersync"]`)
	require.Contains(t, df, "COPY --from=build /out/ordersync /usr/local/bin/ordersync")
	require.Contains(t, df, "EXPOSE "+defaultPort(t, "ORDERSYNC_METRICS_ADDRESS"))
	require.Contains(t, df, "USER nonroot")
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// TestTemporalDynamicConfig: the server ignores a misspelt key, so each key
// must be one of the settings the embedded dev server sets.
func TestTemporalDynamicConfig(t *testing.T) {
	var dc map[string][]struct {
		Value any `yaml:"value"`
	}
	readYAML(t, "temporal/dynamicconfig.yaml", &dc)
	known := map[string]bool{
		dynamicconfig.FrontendEnableUpdateWorkflowExecution.Key().String():              true,
		dynamicconfig.FrontendEnableUpdateWorkflowExecutionAsyncAccepted.Key().String(): true,
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key().String():            true,
		dynamicconfig.MatchingEnableFairness.Key().String():                             true,
	}
	require.NotEmpty(t, dc)
	set := map[string]bool{}
	for key, values := range dc {
		set[strings.ToLower(key)] = true
		// The server's keys are case-insensitive; Key() is lower case.
		require.True(t, known[strings.ToLower(key)], "%s is not a dynamic config key ordersync sets", key)
		require.Len(t, values, 1, key)
		require.Equal(t, true, values[0].Value, key)
	}
	// Without it the accounts sharing a task queue are served first come,
	// first served (internal/fairness).
	require.True(t, set[dynamicconfig.MatchingEnableFairness.Key().String()], "the compose server must turn fairness on")
}

// TestPromtool runs Prometheus's own checks: the rules parse, their unit
// tests (rules_test.yml) pass, and the compose stack's config loads.
func TestPromtool(t *testing.T) {
	promtool := promtest.Binary(t, "promtool")
	for _, args := range [][]string{
		{"check", "rules", "prometheus/rules.yml"},
		{"test", "rules", "prometheus/rules_test.yml"},
		{"check", "config", "prometheus/prometheus.yml"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, err := exec.Command(promtool, args...).CombinedOutput()
			require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
		})
	}
}

// TestRunbooksExist: every alert's runbook annotation points at a heading of
// docs/observability.md.
func TestRunbooksExist(t *testing.T) {
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	readYAML(t, "prometheus/rules.yml", &rules)
	doc := mustRead(t, "../docs/observability.md")
	anchors := map[string]bool{}
	for _, line := range strings.Split(doc, "\n") {
		if h, ok := strings.CutPrefix(line, "#### "); ok {
			anchors[strings.ToLower(strings.TrimSpace(h))] = true
		}
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			require.Equal(t, fmt.Sprintf("docs/observability.md#%s", strings.ToLower(r.Alert)), r.Annotations["runbook"], r.Alert)
			require.True(t, anchors[strings.ToLower(r.Alert)], "docs/observability.md has no heading #### %s", r.Alert)
		}
	}
	require.Positive(t, n)
}

// TestDashboardShape checks what Grafana needs of the dashboard file; the
// queries themselves are evaluated in e2e/prometheus_test.go.
func TestDashboardShape(t *testing.T) {
	var d dashboard
	require.NoError(t, json.Unmarshal([]byte(mustRead(t, "grafana/dashboards/ordersync.json")), &d))
	require.Equal(t, "ordersync", d.UID)
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	require.Equal(t, map[string]string{"datasource": "datasource", "platform": "query"}, vars)
	ids := map[int]bool{}
	allowed := regexp.MustCompile(`\$(platform|__rate_interval)\b`)
	queries := 0
	for _, p := range d.Panels {
		require.False(t, ids[p.ID], "panel id %d twice", p.ID)
		ids[p.ID] = true
		require.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, p.Title)
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Description, "%s: say what it shows", p.Title)
		require.Equal(t, "${datasource}", p.Datasource.UID, p.Title)
		require.NotEmpty(t, p.Targets, p.Title)
		for _, tg := range p.Targets {
			require.NotEmpty(t, tg.Expr, p.Title)
			require.Equal(t, "${datasource}", tg.Datasource.UID, p.Title)
			require.NotContains(t, allowed.ReplaceAllString(tg.Expr, ""), "$", "%s: unknown variable in %s", p.Title, tg.Expr)
			queries++
		}
	}
	require.GreaterOrEqual(t, queries, 15)
}

type dashboard struct {
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID          int    `json:"id"`
		Type        string `json:"type"`
		Title       string `json:"title"`
		Description string `json:"description"`
		GridPos     struct {
			X, Y, W, H int
		} `json:"gridPos"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr       string `json:"expr"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
		} `json:"targets"`
	} `json:"panels"`
}
