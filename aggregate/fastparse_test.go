package aggregate

import (
	"fmt"
	"net/url"
	"testing"
)

// TestFastMementosAgree: the plain-form parser gives what ParseLinks and
// mementos give, target by target (escapes, relative targets, dot
// segments, ports, odd hosts, several rel values, bad datetimes), and
// declines what is not one entry a line.
func TestFastMementosAgree(t *testing.T) {
	base, _ := url.Parse("http://arch.test/tm/http://example.com/")
	lines := []string{
		`<http://example.com/>; rel="original",`,
		`<http://arch.test/web/20200101000000/http://example.com/>; rel="first memento"; datetime="Wed, 01 Jan 2020 00:00:00 GMT",`,
		`<http://arch.test/web/20200102000000/http://example.com/a%20b?x=1&y=(2)>; rel="memento"; datetime="Thu, 02 Jan 2020 00:00:00 GMT",`,
		`</web/20200103000000/http://example.com/>; rel=memento; datetime="Fri, 03 Jan 2020 00:00:00 GMT",`,
		`<http://arch.test/web/../20200104000000/http://example.com/>; rel="memento"; datetime="Sat, 04 Jan 2020 00:00:00 GMT",`,
		`<http://Arch.Test:8080/web/20200105000000/http://example.com/>; rel="memento"; datetime="Sun, 05 Jan 2020 00:00:00 GMT",`,
		`<http://arch.test:x/web/1/>; rel="memento"; datetime="Sun, 05 Jan 2020 00:00:00 GMT",`,
		`<https://arch.test/web/20200106000000/http://example.com/#frag>; rel="memento"; datetime="Mon, 06 Jan 2020 00:00:00 GMT",`,
		`<ftp://arch.test/x>; rel="memento"; datetime="Mon, 06 Jan 2020 00:00:00 GMT",`,
		`<http://arch.test/web/bad/>; rel="memento"; datetime="yesterday",`,
		`<http://arch.test/timegate/http://example.com/>; rel="timegate"`,
	}
	for _, l := range lines {
		links, _ := ParseLinks(l)
		want, wbad := mementos(links, base, "a")
		got, n, bad, ok := fastMementos([]byte(l+"\n"), base, "a")
		if !ok || n != len(links) || bad != wbad || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s:\nfast %v %d %d %v\nslow %v %d %d", l, got, n, bad, ok, want, len(links), wbad)
		}
	}
	for _, l := range []string{
		`<http://a.test/1>; rel="memento"; datetime="Wed, 01 Jan 2020 00:00:00 GMT", <http://a.test/2>; rel="memento"; datetime="Wed, 01 Jan 2020 00:00:00 GMT"`,
		`<http://a.test/1>; rel="mem\"ento"; datetime="Wed, 01 Jan 2020 00:00:00 GMT"`,
		`garbage`,
	} {
		if _, _, _, ok := fastMementos([]byte(l), base, "a"); ok {
			t.Errorf("fast parser took %s", l)
		}
	}
}
