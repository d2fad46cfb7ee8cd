package config

import (
	"errors"
	"fmt"
	"strings"
)

// Worker deployment settings: a worker started with both runs as the
// version BuildID of the Temporal Worker Deployment DeploymentName (worker
// versioning); with neither it runs unversioned. docs/production.md, "Rolling
// upgrades" says how a build is promoted and the old one retired.

// maxDeploymentField is the longest deployment name or build ID accepted:
// the server's own limit is derived from its ID length limit (about 480
// with the default of 1000); 255 leaves room under any sane setting.
const maxDeploymentField = 255

// ValidateDeployment checks a deployment name and build ID as the worker
// would use them: both or neither, and each one the server accepts. flags
// names the two settings in the user's terms (command-line flags, or
// environment variables) so the error points at what to fix.
func ValidateDeployment(name, buildID string, flags [2]string) error {
	switch {
	case name == "" && buildID == "":
		return nil
	case name == "":
		return fmt.Errorf("%s is set but %s is not: a versioned worker needs both (or neither, to run unversioned)", flags[1], flags[0])
	case buildID == "":
		return fmt.Errorf("%s is set but %s is not: a versioned worker needs both (or neither, to run unversioned)", flags[0], flags[1])
	}
	return errors.Join(ValidateDeploymentName(name, flags[0]), ValidateBuildID(buildID, flags[1]))
}

// ValidateDeploymentName checks a Worker Deployment name the way the
// server will; label names the setting in errors.
func ValidateDeploymentName(name, label string) error {
	problems := deploymentFieldProblems(name, label)
	if strings.ContainsAny(name, ".:") {
		problems = append(problems, fmt.Sprintf("%s %q: must not contain '.' or ':' (Temporal separates name and build ID with them)", label, name))
	}
	return joinProblems(problems)
}

// ValidateBuildID checks a build ID the way the server will.
func ValidateBuildID(id, label string) error {
	return joinProblems(deploymentFieldProblems(id, label))
}

func deploymentFieldProblems(v, label string) []string {
	var problems []string
	if v == "" {
		problems = append(problems, label+": must not be empty")
	}
	if strings.HasPrefix(v, "__") {
		problems = append(problems, fmt.Sprintf("%s %q: must not start with \"__\" (reserved by Temporal)", label, v))
	}
	if len(v) > maxDeploymentField {
		problems = append(problems, fmt.Sprintf("%s: %d characters, at most %d", label, len(v), maxDeploymentField))
	}
	if strings.TrimSpace(v) != v || strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		problems = append(problems, fmt.Sprintf("%s %q: no surrounding spaces or control characters", label, v))
	}
	return problems
}

func joinProblems(problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(problems, "; "))
}

// DeploymentSettings names the deployment settings for errors: the worker's
// flags and the environment variables behind them.
var DeploymentSettings = [2]string{
	"--deployment-name (" + EnvPrefix + "_DEPLOYMENT_NAME)",
	"--build-id (" + EnvPrefix + "_BUILD_ID)",
}

// Versioned reports whether the process runs as a Worker Deployment version.
func (p Process) Versioned() bool { return p.DeploymentName != "" && p.BuildID != "" }
