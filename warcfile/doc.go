// Package warcfile keeps WARC files as stored objects: the Writer that
// appends records (warcio.Draft, encoded by warcio) to gzip-compressed
// WARC files with rotation, ".open" naming, a directory lock, group-commit
// durability and the CDXJ side file, crash recovery of unfinished files
// (Recover), and Storage, the interface for where the files live.
//
// Every Wayside producer that writes WARC records as they come writes
// through a Writer: the crawler (package crawl), fixity evidence (package
// fixity). Records are built with warcio.Draft and serialised by its one
// encoder (warcio.Draft.MarshalInFile over warcio.RecordHead); the
// strict reader recovery and Writer.Check verify with is warcio's
// (warcio.ScanMembers).
//
// # Files
//
// A file is named PREFIX-TIMESTAMP17-SERIAL-HOST.warc.gz (Heritrix style),
// starts with a warcinfo record (warcio.NewWarcinfo) and holds one gzip
// member per record. It carries the suffix ".open" (OpenSuffix) while it is
// written; rotation (WriterOptions.MaxFileSize) closes it: every record is
// fsynced and has its side-file line, the side file is rewritten sorted,
// then the file is renamed and the directory synced.
//
// # Durability
//
// Write appends a batch of records; WaitDurable returns once an fsync
// covering them completed (concurrent waiters share one: group commit).
// WaitDurableBatched, for callers that hand the wait off (the crawler),
// lets waiters gather for WriterOptions.CommitWindow (or until
// CommitBatchRecords waiters or CommitBatchBytes of records) before the
// fsync they share.
// Only then are their CDXJ lines appended to the side file
// (cdxj.SideFile, named by cdxj.SideFileName) and their captures delivered
// to WriterOptions.Subscriber, in file order. Callers commit dedup claims
// after WaitDurable, so a revisit only ever refers to a durably written
// record: claim → write → fsync → commit. A write that fails (a full disk)
// is cut off the file; a side-file append that fails is cut back to the
// last whole line and stops the writer (the file stays ".open").
//
// # Recovery
//
// OpenWriter first runs Recover: each leftover ".open" file is cut after
// its last complete, digest-verified record (the tail saved as
// NAME.warc.gz.partial-tail), fsynced, its side file rebuilt sorted from
// the records kept, and renamed. Durable records always lie before the
// cut.
//
// # Storage
//
// Storage is defined here, where it is consumed, as litestream defines its
// replica client: create (exclusive, for the ".open" file), edit, open
// for reading at any offset, rename (publish), stat, list, remove and
// sync. Dir, the local directory, is the implementation in this package
// (the default, and what the lock (Locker) and the free-space check need);
// another backend — object storage — is one more implementation in a
// subpackage of its own. The CDXJ side files and the lock stay in the
// local directory WriterOptions.Dir.
//
// # Locations
//
// A WARC location names where one file lives, for every reader of records
// (replay, id_, fixity, the ingester): a plain base name, looked up in
// the local WARC directories (warcio.FindFile), file:///PATH,
// s3://BUCKET/KEY?endpoint=… (package warcfile/s3 registers it) or
// http(s)://… (read only, by Range; a server that ignores Range is
// refused). Locations opens them; a backend registers its scheme
// (RegisterScheme, as dedupindex's backends do). Remote files are
// RangeFiles: reads by ranged requests conditional on the version opened,
// so a file replaced or cut after Open fails the read (ChangedError,
// naming the location and offset) rather than mixing versions. A WARC
// file stored in a WACZ is any of these naming the WACZ with "#NAME"
// appended (coll.wacz#a.warc.gz, warcio.MemberName, or
// s3://B/coll.wacz?endpoint=…#a.warc.gz): Open returns the stored member
// archive/NAME as a section of the zip, read by range (SplitMember).
// Credentials never come from a location (one carrying user information is
// refused) and never appear in errors or logs. Join and Base build and
// take apart locations.
//
// # Failpoints
//
// PointWrite ("warcfile.write", each write(2) of a WARC file) and
// PointChunk ("warcfile.between-chunks", between the write(2) calls of one
// large record) are points of package internal/failpoint; the side file's
// appends are "cdxj.side-append".
package warcfile
