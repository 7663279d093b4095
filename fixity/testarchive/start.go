package testarchive

import "testing"

// Start starts a test archive of collection "web" holding the built-in
// site, closed when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	a, err := New("web")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if _, err := a.LoadBuiltin(); err != nil {
		t.Fatal(err)
	}
	return a
}
