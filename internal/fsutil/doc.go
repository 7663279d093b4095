// Package fsutil owns the project's durable file replacement: writing a
// file so that a crash leaves either the old or the new content under its
// name, never a torn mix, and syncing directories so renames and new
// files survive a power loss. It also tells a full disk: the free space of
// a file system against a writer's reserve (CheckFree) and whether an
// error means the disk is full (IsDiskFull).
package fsutil
