package sidecar

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/wayside-archive/wayside/warcfile"
)

// PrepareDirs readies the file system before the daemon opens anything in
// it (`wayside serve` calls it before it opens the index; New calls it
// too):
//
//   - the data directory is created with mode 0700: it holds the index,
//     checkpoints, CDXJ files and the socket, which only the daemon's user
//     may read or replace. An existing one that group or others may read
//     or enter is tightened to 0700 (logged); one they may write is
//     refused, since another user could already have replaced what is in
//     it;
//   - the directory of the Unix socket (listen.unix) is created 0700 too;
//     an existing one others may write without the sticky bit is refused
//     (they could swap the socket);
//   - every WARC directory to ingest (ingest.dirs) that exists must be
//     readable: a daemon that cannot list it would ingest nothing.
func (c *Config) PrepareDirs(log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := privateDir(c.DataDir, "data_dir", log); err != nil {
		return err
	}
	if c.Listen.Unix != "-" {
		dir := filepath.Dir(c.Listen.Unix)
		if fi, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			if err := privateDir(dir, "listen.unix", log); err != nil {
				return err
			}
		} else if err != nil {
			return keyErr("listen.unix", "%v", err)
		} else if m := fi.Mode(); m&0o022 != 0 && m&os.ModeSticky == 0 {
			return keyErr("listen.unix", "the socket's directory %s is writable by group or others (mode %04o): another user could replace the socket; chmod 700 %s or choose another path",
				dir, m.Perm(), dir)
		}
	}
	for i, d := range c.Ingest.Dirs {
		if warcfile.IsURL(d) {
			continue
		}
		if _, err := os.ReadDir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return keyErr(fmt.Sprintf("ingest.dirs[%d]", i), "%s cannot be listed: %v", d, errors.Unwrap(err))
		}
	}
	return nil
}

// privateDir makes dir exist with mode 0700 (see PrepareDirs).
func privateDir(dir, key string, log *slog.Logger) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return keyErr(key, "%v", err)
		}
		// MkdirAll's mode passes through the umask, which can only remove
		// bits; set it exactly anyway.
		if err := os.Chmod(dir, 0o700); err != nil {
			return keyErr(key, "%v", err)
		}
		return nil
	}
	if err != nil {
		return keyErr(key, "%v", err)
	}
	if !fi.IsDir() {
		return keyErr(key, "%s is not a directory", dir)
	}
	m := fi.Mode().Perm()
	switch {
	case m&0o022 != 0:
		return keyErr(key, "%s is writable by group or others (mode %04o): another user could have replaced the index, checkpoints or socket in it; check its contents, then chmod 700 %s",
			dir, m, dir)
	case m&0o077 != 0:
		if err := os.Chmod(dir, 0o700); err != nil {
			return keyErr(key, "%s has mode %04o and cannot be made private (0700): %v", dir, m, err)
		}
		log.Warn("sidecar: data directory was readable by others; its mode is now 0700", "dir", dir, "was", fmt.Sprintf("%04o", m))
	}
	return nil
}
