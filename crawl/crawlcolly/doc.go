// Package crawlcolly is the colly v2 plug-in of package crawl: Attach makes
// a colly collector record everything it fetches, at the transport, through
// a crawl.Recorder.
//
// It is a package of its own so that programs importing crawl (the wayside
// binary among them) do not link colly and what colly imports (App Engine's
// urlfetch and the protobuf registry behind it), whose package
// initialisation every run of such a program would otherwise pay.
package crawlcolly
