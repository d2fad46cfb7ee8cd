//go:build unix

package store

import (
	"fmt"
	"os"
	"syscall"
)

// fileID identifies a file by device and inode: a deleted or replaced
// database lives on under its open handles, so only the identity of what
// the path names tells whether writes still reach the file at the path.
type fileID struct {
	dev, ino uint64
	known    bool // false where the platform has no inode numbers
}

func statFileID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, fmt.Errorf("stat %s: no device and inode", path)
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), known: true}, nil
}
