package postdedup

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/wayside-archive/wayside/cdxj"
)

// planFormat is the first line of a plan file.
const planFormat = "#wayside-dedup-plan"

// PlanHeader is the first line of a plan.
type PlanHeader struct {
	Format    int      `json:"format"`
	Manifests []string `json:"manifests"`
	Policy    Policy   `json:"policy"`
}

// Copy is one plan line: a later copy to rewrite as a revisit of Original,
// with what the revisit keeps of it (its WARC header fields and the exact
// bytes of its HTTP head). Resolve has compared its payload with the
// original's byte for byte.
type Copy struct {
	Path     string
	Offset   int64
	Length   int64
	RecordID string
	URI      string
	Version  string
	Headers  [][2]string
	Head     []byte
	// PayloadLength is the payload the revisit no longer stores.
	PayloadLength int64
	Key           string
	Original      Original
}

// planReader merges plan files (each sorted by file and offset) into one
// stream of copies in file and offset order.
type planReader struct {
	names []string
	pr    *io.PipeReader
	br    *bufio.Reader
	done  chan error
	files []*os.File
	line  int
	// peekLine is the line unread; big holds a line longer than br's
	// buffer.
	peekLine, big []byte
	peeked        bool
}

// openPlans opens plan files for reading in (file, offset) order.
func openPlans(names []string) (*planReader, error) {
	p := &planReader{names: names, done: make(chan error, 1)}
	var inputs []cdxj.MergeInput
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			p.close()
			return nil, fmt.Errorf("postdedup: plan: %w", err)
		}
		p.files = append(p.files, f)
		br := bufio.NewReader(f)
		first, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(first, planFormat+"\t") {
			p.close()
			return nil, fmt.Errorf("postdedup: plan %s: not a wayside dedup plan", n)
		}
		var h PlanHeader
		if json.Unmarshal([]byte(strings.TrimPrefix(strings.TrimSpace(first), planFormat+"\t")), &h) != nil {
			p.close()
			return nil, fmt.Errorf("postdedup: plan %s: unsupported plan header", n)
		}
		if h.Format != lineFormat {
			p.close()
			return nil, fmt.Errorf("postdedup: plan %s: %w", n, errOldFormat("plan", h.Format))
		}
		inputs = append(inputs, cdxj.MergeInput{Name: n, R: br})
	}
	pr, pw := io.Pipe()
	p.pr, p.br = pr, bufio.NewReaderSize(pr, 256<<10)
	go func() {
		err := cdxj.Merge(pw, inputs, cdxj.MergeOptions{})
		pw.CloseWithError(err)
		p.done <- err
	}()
	return p, nil
}

// next returns the next copy, or nil at the end.
func (p *planReader) next() (*Copy, error) {
	line, err := p.nextRaw()
	if line == nil || err != nil {
		return nil, err
	}
	return p.parse(line, p.line)
}

// parse parses line n (merged) of the plans.
func (p *planReader) parse(line []byte, n int) (*Copy, error) {
	c, err := parseCopy(line)
	if err != nil {
		return nil, fmt.Errorf("postdedup: plan %v line %d (merged): %v", p.names, n, err)
	}
	return c, nil
}

// nextRaw returns the next plan line without its newline (valid until
// the next call), nil at the end.
func (p *planReader) nextRaw() ([]byte, error) {
	if p.peeked {
		p.peeked = false
		return p.peekLine, nil
	}
	line, err := readSlice(p.br, &p.big)
	if len(line) == 0 {
		if err == io.EOF {
			return nil, nil
		}
		return nil, fmt.Errorf("postdedup: plan: %w", err)
	}
	p.line++
	return bytes.TrimSuffix(line, []byte{'\n'}), nil
}

// readSlice reads up to and including the next newline: br's buffer, or
// big holding a line longer than it (both valid until the next read).
func readSlice(br *bufio.Reader, big *[]byte) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return line, err
	}
	*big = append((*big)[:0], line...)
	for err == bufio.ErrBufferFull {
		line, err = br.ReadSlice('\n')
		*big = append(*big, line...)
	}
	return *big, err
}

// unread makes line, the line nextRaw returned last, the next one again.
func (p *planReader) unread(line []byte) {
	p.peekLine, p.peeked = append(p.peekLine[:0], line...), true
}

// copiesOf spools the copies of one input file to an unnamed temporary
// file in tempDir and returns them (the plan must be read in file order:
// files are visited in path order). Lines are parsed as they are read
// back (a malformed one is reported by its merged line number then);
// memory holds none of them whatever their number.
func (p *planReader) copiesOf(path, tempDir string) (fc *fileCopies, err error) {
	var bw *bufio.Writer
	defer func() {
		if err == nil && bw != nil {
			err = fc.ready(bw)
		}
		if err != nil {
			fc.close()
			fc = nil
		}
	}()
	want := escapeField(path)
	for {
		line, err := p.nextRaw()
		if err != nil || line == nil {
			return fc, err
		}
		field, _, _ := bytes.Cut(line, []byte{'\t'})
		if string(field) != want {
			c, err := p.parse(line, p.line)
			switch {
			case err != nil:
				return fc, err
			case pathLess(path, c.Path):
				p.unread(line)
				return fc, nil
			default:
				return fc, fmt.Errorf("postdedup: plan names %s offset %d, which is not an input of the manifest", c.Path, c.Offset)
			}
		}
		if fc == nil {
			f, err := os.CreateTemp(tempDir, "wayside-copies-*")
			if err != nil {
				return nil, fmt.Errorf("postdedup: plan: %w", err)
			}
			os.Remove(f.Name()) // unnamed: nothing is left behind
			fc, bw = &fileCopies{f: f, plans: p, first: p.line}, bufio.NewWriterSize(f, 64<<10)
		}
		bw.Write(line)
		if err := bw.WriteByte('\n'); err != nil {
			return fc, fmt.Errorf("postdedup: plan: spool: %w", err)
		}
		fc.n++
	}
}

// fileCopies is one input file's plan copies in offset order, spooled to
// an unnamed temporary file and read back one at a time by each pass over
// them (rewrite makes one, validation three), so that memory does not grow
// with the number of copies of a file. A nil *fileCopies has none.
type fileCopies struct {
	f     *os.File
	br    *bufio.Reader
	plans *planReader // names the plans in errors
	first int         // merged plan line of the first copy
	n     int
	err   error
	big   []byte  // a line longer than br's buffer
	mem   []*Copy // memCopies: held in memory instead of spooled
	i     int     // copies passed in this pass
}

// memCopies holds copies in memory as a fileCopies (tests).
func memCopies(cs []*Copy) *fileCopies { return &fileCopies{mem: cs, n: len(cs)} }

// ready ends spooling: bw is flushed and the first pass may start.
func (fc *fileCopies) ready(bw *bufio.Writer) error {
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("postdedup: plan: spool: %w", err)
	}
	fc.br = bufio.NewReaderSize(fc.f, 64<<10)
	fc.rewind()
	return fc.err
}

// len returns the number of copies.
func (fc *fileCopies) len() int {
	if fc == nil {
		return 0
	}
	return fc.n
}

// rewind starts a new pass from the first copy.
func (fc *fileCopies) rewind() {
	if fc == nil || fc.err != nil {
		return
	}
	fc.i = 0
	if fc.f == nil {
		return
	}
	if _, err := fc.f.Seek(0, io.SeekStart); err != nil {
		fc.err = fmt.Errorf("postdedup: plan: spool: %w", err)
		return
	}
	fc.br.Reset(fc.f)
}

// line returns the next spooled line of the pass (valid until the next
// read), nil at the end or after an error.
func (fc *fileCopies) line() []byte {
	if fc.err != nil || fc.i >= fc.n {
		return nil
	}
	fc.i++
	line, err := readSlice(fc.br, &fc.big)
	if err != nil {
		fc.err = fmt.Errorf("postdedup: plan: spool: copy %d of %d: %w", fc.i, fc.n, err)
		return nil
	}
	return line[:len(line)-1]
}

// next returns the next copy of the pass, nil at the end or after an
// error (see failed).
func (fc *fileCopies) next() *Copy {
	if fc == nil || fc.err != nil || fc.i >= fc.n {
		return nil
	}
	if fc.f == nil {
		fc.i++
		return fc.mem[fc.i-1]
	}
	line := fc.line()
	if line == nil {
		return nil
	}
	c, err := fc.plans.parse(line, fc.first+fc.i-1)
	if err != nil {
		fc.err = err
		return nil
	}
	return c
}

// nextSpan returns the offset and length of the next copy of the pass,
// reading only those fields (the passes that need no more); ok is false
// at the end or after an error (see failed).
func (fc *fileCopies) nextSpan() (offset, length int64, ok bool) {
	if fc == nil || fc.err != nil || fc.i >= fc.n {
		return 0, 0, false
	}
	if fc.f == nil {
		fc.i++
		c := fc.mem[fc.i-1]
		return c.Offset, c.Length, true
	}
	line := fc.line()
	if line == nil {
		return 0, 0, false
	}
	// PATH OFFSET LENGTH ...
	_, rest, _ := bytes.Cut(line, []byte{'\t'})
	off, rest, _ := bytes.Cut(rest, []byte{'\t'})
	n, _, _ := bytes.Cut(rest, []byte{'\t'})
	var err1, err2 error
	offset, err1 = strconv.ParseInt(string(off), 10, 64)
	length, err2 = strconv.ParseInt(string(n), 10, 64)
	if err1 != nil || err2 != nil || length <= 0 {
		_, err := fc.plans.parse(line, fc.first+fc.i-1) // names the problem
		if err == nil {
			err = fmt.Errorf("postdedup: plan %v line %d (merged): bad offset or length", fc.plans.names, fc.first+fc.i-1)
		}
		fc.err = err
		return 0, 0, false
	}
	return offset, length, true
}

// failed is the error met reading the copies back, if any.
func (fc *fileCopies) failed() error {
	if fc == nil {
		return nil
	}
	return fc.err
}

func (fc *fileCopies) close() {
	if fc != nil && fc.f != nil {
		fc.f.Close()
	}
}

func (p *planReader) close() {
	if p.pr != nil {
		p.pr.Close()
		<-p.done
	}
	for _, f := range p.files {
		f.Close()
	}
}

// pathLess orders input files as manifests and plans sort them: by their
// escaped path followed by a tab, in byte order.
func pathLess(a, b string) bool {
	return escapeField(a)+"\t" < escapeField(b)+"\t"
}
