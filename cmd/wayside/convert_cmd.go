package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wayside-archive/wayside/convert"
)

const convertUsage = `<arc2warc|verify> [flags] [args]

  arc2warc [-o DIR] [--warc-version 1.1|1.0] [--overwrite] [--json] [-q] ARC...
      convert each ARC file (v1 or v2, gzip or not) into DIR/NAME.warc.gz,
      following the IIPC ARC-to-WARC guidelines; the input is never modified
      and each output appears whole (written to a temporary file, fsynced,
      renamed). Unreadable ARC records are listed and the exit status is 1.
  verify [--json] [-q] ARC WARC
      prove a conversion lost nothing: every ARC record has exactly one WARC
      record with the same target URI, date and payload digest (computed
      from both files' bytes), every WARC digest holds, and the WARC holds
      nothing else. Prints what differs; exit status 1 when anything does.`

func runConvert(ctx context.Context, e *env, args []string) error {
	return runGroup(ctx, e, "convert", convertUsage, args, []subcommand{{"arc2warc", runARC2WARC}, {"verify", runConvertVerify}})
}

func runARC2WARC(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "convert arc2warc", "[flags] ARC...\n\nConvert ARC files to WARC files (one WARC file per ARC file, NAME.warc.gz).")
	dir := fs.String("o", ".", "write the WARC files into `DIR` (created if missing)")
	version := fs.String("warc-version", convert.Version11, "WARC `VERSION` to write: 1.1 or 1.0")
	overwrite := overwriteFlag(fs)
	level := fs.Int("level", 6, "gzip compression `LEVEL` (1-9)")
	asJSON := fs.Bool("json", false, "print one JSON result per file on stdout")
	quiet := fs.quietFlag("print nothing but errors")
	tolerate := tolerateFlag(fs)
	fs.oneOf("warc-version", convert.Version11, convert.Version10)
	fs.within("level", 1, 9)
	in := inputFlags{only: "arc"}
	in.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 && !in.given() {
		return fs.usagef("convert arc2warc: no ARC files given")
	}
	files, err := in.expand(ctx, e, "convert arc2warc", fs.Args())
	defer in.close()
	if err != nil {
		return err
	}
	if err := checkInputs("convert arc2warc", files); err != nil {
		return err
	}
	fi, err := os.Stat(*dir)
	if err == nil && !fi.IsDir() {
		return fmt.Errorf("convert arc2warc: -o %s: not a directory", *dir)
	}
	created := err != nil
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return fmt.Errorf("convert arc2warc: %w", err)
	}
	outs := make([]outFile, len(files))
	for i, f := range files {
		outs[i] = outFile{"output of " + f, filepath.Join(*dir, convert.OutputName(f))}
	}
	if err := checkOutput("convert arc2warc", files, *overwrite, outs...); err != nil {
		if created {
			os.Remove(*dir)
		}
		return err
	}
	opts := convert.Options{Version: *version, Overwrite: *overwrite, CompressionLevel: *level, Software: "Wayside " + versionString()}
	enc := json.NewEncoder(e.stdout)
	failed, problems := 0, 0
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		res, err := convert.ARCToWARC(ctx, f, *dir, opts)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			failed++
			fmt.Fprintln(e.stderr, "wayside:", oneLine(err.Error()))
			continue
		}
		for _, p := range res.Problems {
			fmt.Fprintln(e.stderr, "wayside: skipped:", oneLine(p))
		}
		problems += len(res.Problems)
		switch {
		case *asJSON:
			if err := enc.Encode(res); err != nil {
				return err
			}
		case !*quiet:
			fmt.Fprintf(e.stdout, "%s -> %s: %d records (%d responses, %d resources), %d read leniently, %d skipped\n",
				res.ARC, res.WARC, res.Records, res.Responses, res.Resources, res.Lenient, len(res.Problems))
		}
	}
	if failed > 0 || problems > 0 {
		err := fmt.Errorf("convert arc2warc: %d of %d files not converted, %d unreadable ARC records skipped (listed above)", failed, len(files), problems)
		if failed > 0 {
			return err
		}
		return tolerated(e, *tolerate, err)
	}
	return nil
}

func runConvertVerify(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "convert verify", "[flags] ARC WARC\n\nCheck that WARC holds exactly the records of ARC (same URI, date and payload digest).")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	quiet := fs.quietFlag("print only differences")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return fs.usagef("convert verify: want an ARC file and a WARC file, got %d arguments", fs.NArg())
	}
	if err := checkInputs("convert verify", fs.Args()); err != nil {
		return err
	}
	rep, err := convert.Verify(ctx, fs.Arg(0), fs.Arg(1))
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		for _, m := range rep.Missing {
			fmt.Fprintf(e.stdout, "MISSING  %s record %s: no WARC record with its URI, date and payload digest\n", rep.ARC, m)
		}
		for _, x := range rep.Extra {
			fmt.Fprintf(e.stdout, "EXTRA    %s record %s: from no ARC record\n", rep.WARC, x)
		}
		for _, d := range rep.Damaged {
			fmt.Fprintf(e.stdout, "DAMAGED  %s\n", d)
		}
		for _, p := range rep.Problems {
			fmt.Fprintf(e.stdout, "UNREADABLE %s\n", p)
		}
		for _, d := range rep.Disagreements {
			fmt.Fprintf(e.stdout, "DISAGREE %s\n", d)
		}
		for _, n := range rep.NotConverted {
			fmt.Fprintf(e.stdout, "NOT-CONVERTED %s\n", n)
		}
		for _, s := range rep.Skipped {
			fmt.Fprintf(e.stdout, "SKIPPED  %s offset %s (listed in %s)\n", rep.ARC, strings.TrimPrefix(s, "offset "), rep.WARC)
		}
		if !*quiet || !rep.OK() {
			fmt.Fprintf(e.stdout, "%d ARC records, %d WARC records, %d matched, %d missing, %d extra, %d damaged, %d unreadable; second framing of the ARC: %d records, %d disagreements, %d not converted, %d stretches listed as skipped\n",
				rep.ARCRecords, rep.WARCRecords, rep.Matched, len(rep.Missing), len(rep.Extra), len(rep.Damaged), len(rep.Problems), rep.Framed, len(rep.Disagreements), len(rep.NotConverted), len(rep.Skipped))
		}
	}
	if !rep.OK() {
		if rep.ARCRecords == 0 {
			return fmt.Errorf("convert verify: %s holds no readable ARC record", rep.ARC)
		}
		return fmt.Errorf("convert verify: %s does not hold exactly the records of %s", rep.WARC, rep.ARC)
	}
	return nil
}
