package config

import (
	"encoding/json"
	"fmt"
)

// Limits of a platforms file. A file is read whole and every platform
// travels in workflow inputs, so without bounds a runaway file (20 MB,
// 235,000 platforms) took 11 s and 1 GB to load, and one long string passed
// validation only to fail `platform start` at Temporal's payload limit.
const (
	// MaxFileSize is the largest platforms file read.
	MaxFileSize = 4 << 20
	// MaxPlatforms is the most platforms one file may declare.
	MaxPlatforms = 10000
)

// Lengths of a platform's strings, in bytes. Together they keep one
// platform's settings far below Temporal's 2 MB payload limit.
const (
	maxEndpointLen = 2048
	maxEnvNameLen  = 256
	maxFilePathLen = 4096
	maxOptionsJSON = 64 << 10
)

// checkLengths reports strings longer than their limit and a platform with
// too many windows or too large options. It runs first, so a huge value is
// reported by its size and never quoted in another message.
func (p Platform) checkLengths(ve *ValidationError) {
	long := func(field, value string, limit int) {
		if len(value) > limit {
			ve.add(p.Name, field, "is %d bytes long; the limit is %d", len(value), limit)
		}
	}
	long("endpoint", p.Endpoint, maxEndpointLen)
	long("credentials.env", p.Credentials.Env, maxEnvNameLen)
	long("credentials.file", p.Credentials.File, maxFilePathLen)
	p.tuning().CheckLengths(p.reporter(ve, nil))
	if len(p.Options) > 0 {
		b, err := json.Marshal(p.Options)
		switch {
		case err != nil:
			ve.add(p.Name, "options", "cannot be encoded as JSON: %v", err)
		case len(b) > maxOptionsJSON:
			ve.add(p.Name, "options", "are %d bytes as JSON; the limit is %d", len(b), maxOptionsJSON)
		}
	}
}

// checkFileSize describes a file larger than MaxFileSize ("" when it fits).
func checkFileSize(size int64) string {
	if size > MaxFileSize {
		return fmt.Sprintf("the file is %d bytes; the limit is %d bytes (%d MiB)", size, MaxFileSize, MaxFileSize>>20)
	}
	return ""
}
