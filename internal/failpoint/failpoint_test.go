package failpoint

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOffByDefault(t *testing.T) {
	if err := Inject("x.y"); err != nil {
		t.Fatalf("Inject on an unarmed point: %v", err)
	}
	if k, err := Write("x.y", 10); k != 10 || err != nil {
		t.Fatalf("Write on an unarmed point = %d, %v", k, err)
	}
}

func TestEnableDisable(t *testing.T) {
	boom := errors.New("boom")
	off := Enable("a.b", Error(boom))
	if err := Inject("a.b"); !errors.Is(err, boom) {
		t.Fatalf("armed point: %v", err)
	}
	if err := Inject("a.c"); err != nil {
		t.Fatalf("another point: %v", err)
	}
	off()
	off() // idempotent
	if err := Inject("a.b"); err != nil {
		t.Fatalf("after disable: %v", err)
	}
	if armed.Load() != 0 {
		t.Fatalf("armed count %d after disable", armed.Load())
	}
}

func TestShortWriteAndNth(t *testing.T) {
	off := Enable("w", Nth(2, ShortWrite(3, syscall.ENOSPC)))
	defer off()
	if k, err := Write("w", 10); k != 10 || err != nil {
		t.Fatalf("first hit = %d, %v", k, err)
	}
	if k, err := Write("w", 10); k != 3 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("second hit = %d, %v", k, err)
	}
	if k, err := Write("w", 10); k != 10 || err != nil {
		t.Fatalf("third hit = %d, %v", k, err)
	}
}

func TestArmSpec(t *testing.T) {
	off, err := Arm("p.one=error; p.two=2*short:5")
	if err != nil {
		t.Fatal(err)
	}
	defer off()
	if err := Inject("p.one"); !errors.Is(err, ErrInjected) {
		t.Fatalf("p.one: %v", err)
	}
	if k, err := Write("p.two", 9); k != 9 || err != nil {
		t.Fatalf("p.two first: %d %v", k, err)
	}
	if k, err := Write("p.two", 9); k != 5 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("p.two second: %d %v", k, err)
	}
	for _, bad := range []string{"noequals", "x=frobnicate", "x=0*kill", "x=short:-1"} {
		if _, err := Arm(bad); err == nil {
			t.Errorf("Arm(%q) accepted", bad)
		}
	}
	if armed.Load() != 2 {
		t.Fatalf("a refused spec left points armed: %d", armed.Load())
	}
}

// TestHoldWaitsForCancel: a point armed "hold" keeps Wait until its
// context ends, then returns the context's error; unarmed, Wait returns at
// once, and other actions act as for Inject.
func TestHoldWaitsForCancel(t *testing.T) {
	if err := Wait(context.Background(), "h.point"); err != nil {
		t.Fatalf("Wait on an unarmed point: %v", err)
	}
	off, err := Arm("h.point=hold;h.other=error")
	if err != nil {
		t.Fatal(err)
	}
	defer off()
	if err := Wait(context.Background(), "h.other"); !errors.Is(err, ErrInjected) {
		t.Fatalf("Wait on an error point: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Wait(ctx, "h.point") }()
	select {
	case err := <-done:
		t.Fatalf("Wait returned before its context ended: %v", err)
	default:
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after cancel: %v", err)
	}
}

// TestKill runs a child that arms a kill point and hits it: it must die by
// SIGKILL at the point, never reaching the code after it.
func TestKill(t *testing.T) {
	if os.Getenv("FAILPOINT_KILL_CHILD") == "1" {
		Enable("k", Kill())
		_ = Inject("k")
		os.Exit(0) // not reached
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill$")
	cmd.Env = append(os.Environ(), "FAILPOINT_KILL_CHILD=1")
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child: %v, want killed", err)
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want SIGKILL", ws)
	}
}

// TestNoProductionArming checks that no non-test file of the module arms a
// failpoint (test support in internal/testenv aside): points stay off in
// every production build.
func TestNoProductionArming(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		// internal/testenv arms failpoints in crash-test children; the
		// module's TestDependencyRules keeps it out of every build but
		// the tests'.
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") ||
			strings.Contains(filepath.ToSlash(p), "internal/failpoint/") || strings.Contains(filepath.ToSlash(p), "internal/testenv/") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "failpoint" && (sel.Sel.Name == "Enable" || sel.Sel.Name == "Arm") {
				t.Errorf("%s arms a failpoint (failpoint.%s) outside a test", p, sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
