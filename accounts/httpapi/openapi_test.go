package httpapi

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// openapiPath is the document that describes this handler.
var openapiPath = filepath.Join("..", "..", "docs", "openapi.yaml")

type openapiParam struct {
	Ref  string `yaml:"$ref"`
	Name string `yaml:"name"`
	In   string `yaml:"in"`
}

// documented reads docs/openapi.yaml as "METHOD /path" -> its query
// parameters, sorted.
func documented(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(openapiPath)
	require.NoError(t, err)
	var doc struct {
		OpenAPI    string                                       `yaml:"openapi"`
		Paths      map[string]map[string]yaml.Node              `yaml:"paths"`
		Components struct{ Parameters map[string]openapiParam } `yaml:"components"`
	}
	require.NoError(t, yaml.Unmarshal(b, &doc))
	require.True(t, strings.HasPrefix(doc.OpenAPI, "3."), "an OpenAPI 3 document")
	resolve := func(p openapiParam) openapiParam {
		if p.Ref == "" {
			return p
		}
		ref, ok := doc.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
		require.True(t, ok, "unresolved %s", p.Ref)
		return ref
	}
	out := map[string][]string{}
	for path, item := range doc.Paths {
		var shared []openapiParam
		if n, ok := item["parameters"]; ok {
			require.NoError(t, n.Decode(&shared))
		}
		for key, n := range item {
			method := strings.ToUpper(key)
			switch method {
			case "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS":
			default:
				continue
			}
			var op struct{ Parameters []openapiParam }
			require.NoError(t, n.Decode(&op))
			params := []string{}
			for _, p := range append(append([]openapiParam{}, shared...), op.Parameters...) {
				if p = resolve(p); p.In == "query" {
					params = append(params, p.Name)
				}
			}
			sort.Strings(params)
			out[method+" "+path] = params
		}
	}
	return out
}

// TestOpenAPIMatchesRoutes fails when a route is served but not
// documented, documented but not served, or when their query parameters
// differ.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	f := newFixture(t)
	served := map[string][]string{}
	for _, rt := range f.h.routes() {
		params := append([]string{}, rt.params...)
		sort.Strings(params)
		served[rt.method+" "+rt.path] = params
	}
	doc := documented(t)
	for route, params := range served {
		got, ok := doc[route]
		require.True(t, ok, "%s is served but not in %s", route, openapiPath)
		require.Equal(t, params, got, "query parameters of %s: handler vs %s", route, openapiPath)
	}
	for route := range doc {
		_, ok := served[route]
		require.True(t, ok, "%s is in %s but not served", route, openapiPath)
	}
}
