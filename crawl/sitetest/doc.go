// Package sitetest serves Wayside's example web site from memory on a
// loopback port: HTML pages linking CSS, JavaScript and images, the same
// payload under several URLs, chunked and gzip-encoded responses, a
// redirect, a 404, ETag/Last-Modified validators that honour conditional
// requests, a page that changes on every request, a slow resource and a
// robots.txt. The crawl tests and `wayside demo` crawl it; tests derive
// their expected counts from the Resource definitions.
package sitetest
