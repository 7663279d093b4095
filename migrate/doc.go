// Package migrate performs format migration inside WARC files, the
// preservation action of the Tessella/Preservica study's section 5: find
// the payloads in formats at risk through the per-container format store
// (package characterize), convert them with real tools run in a sandbox,
// validate each conversion, and write the results back in one of the
// study's two workflows.
//
// The pieces, in the order a run uses them:
//
//   - RiskModel (risk.go): an editable registry of formats with answers to
//     risk questions (proprietary, undisclosed specification, adoption,
//     rendering tools, obsolescence) and user-set weights combined into a
//     risk value in [0,1]. Select formats by PUID list or by threshold.
//     DefaultRiskModel ships a registry for web formats.
//   - Locate (migrate.go): the containers that hold those formats come from
//     the store's per-container aggregates (Store.Risk) and the records from
//     its per-record table (Store.Records): no WARC is scanned to find
//     them. Objects nested inside a payload (a BMP in a ZIP) are found too,
//     and members of zip payloads are migrated, zips in zips recursively
//     within a depth and an unpacked-size limit (nested.go).
//   - Pathways (pathway.go): source PUID → target format and a tool
//     invocation. DefaultPathways use ImageMagick, FFmpeg, Ghostscript
//     and LibreOffice headless (with a private profile in the run's
//     directory).
//   - Sandbox (sandbox.go): a converter runs with a time limit, a memory
//     and file-size limit (prlimit), no network (a fresh network namespace
//     when the process may create one), a private temporary directory and an
//     empty environment; its output is read only when it exited 0 and
//     produced a non-empty file below the output cap.
//   - Validate (validate.go): the result must be identified (siegfried) as
//     the pathway's target format, and its transformational properties must
//     match the original's: images width, height and per-channel histogram
//     spread (decoded in Go, independently of the converter); documents page
//     count; audio and video duration and stream count (ffprobe).
//   - Write (write.go): the formally correct workflow writes a new WARC of
//     conversion records (WARC-Refers-To the original, the same
//     WARC-Target-URI, their own digests), each followed by a metadata
//     record with the provenance (pathway, tool and version, arguments,
//     validation results); the pragmatic workflow writes a copy of each
//     input WARC (or ARC) in which the migrated payloads replace the
//     originals at URLs with the target's extension (a 301 left at the old
//     URL), HTML and CSS linking to them are rewritten (links.go), and
//     every other record is copied byte for byte. Inputs are never
//     modified; outputs are written to a temporary file and renamed into
//     place.
//   - Run (run.go): one run over a set of files for both workflows, as
//     `wayside migrate` and the daemon's POST /v1/migrate use it.
//
// A conversion that fails, hangs, produces nothing or fails validation is
// reported per record with its reason and writes nothing for that record;
// the run goes on.
package migrate
