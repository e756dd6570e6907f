package parse_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/records"
)

// A CDX with its header: the revisit row is an unchanged visit and takes
// the status of the capture it repeats.
func ExampleNew_cdx() {
	p, err := parse.New("cdx", parse.Config{})
	if err != nil {
		panic(err)
	}
	var obs records.Observation
	for _, line := range []string{
		" CDX N b a m s k r M S V g",
		"org,iana)/ 20140126200624 http://www.iana.org/ text/html 200 OSSAPWJ23L56IYVRW3GFEAR4MCJMGPTB - - 2258 334 iana.warc.gz",
		"org,iana)/ 20140127171238 http://www.iana.org/ warc/revisit - OSSAPWJ23L56IYVRW3GFEAR4MCJMGPTB - - 536 2678 dupes.warc.gz",
		"org,iana)/ 2014 http://www.iana.org/ text/html 200 - - - 1 2 f",
	} {
		err := p.Parse([]byte(line), &obs)
		switch {
		case err == nil:
			fmt.Println(obs.Object, obs.Time.Format(time.RFC3339), obs.Status, obs.Digest, obs.Changed == records.Unchanged)
		case parse.IsSkip(err):
			fmt.Println("skipped:", parse.Reason(err))
		default:
			fmt.Println("rejected:", parse.Reason(err))
		}
	}
	// Output:
	// skipped: comment
	// http://www.iana.org/ 2014-01-26T20:06:24Z 200 sha1:OSSAPWJ23L56IYVRW3GFEAR4MCJMGPTB false
	// http://www.iana.org/ 2014-01-27T17:12:38Z 200 sha1:OSSAPWJ23L56IYVRW3GFEAR4MCJMGPTB true
	// rejected: time
}

// A sitemap fetched at a known time: each <url> with a <lastmod> is a
// visit at the fetch time carrying the lastmod and the claimed frequency.
func ExampleNewSitemapReader() {
	doc := `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>https://www.example.com/</loc><lastmod>2024-01-14</lastmod><changefreq>daily</changefreq></url>
<url><loc>https://www.example.com/about</loc></url>
</urlset>`
	rr, err := parse.NewSitemapReader(strings.NewReader(doc), parse.Config{}, time.Date(2024, 1, 15, 9, 30, 0, 0, time.UTC))
	if err != nil {
		panic(err)
	}
	var obs records.Observation
	for {
		_, err := rr.Next(&obs)
		if err != nil && !parse.IsSkip(err) {
			break // io.EOF
		}
		if err != nil {
			fmt.Println("skipped:", parse.Reason(err))
			continue
		}
		fmt.Println(obs.Object, obs.Time.Format(time.RFC3339), obs.LastModified.Format(time.RFC3339), obs.ChangeFreq)
	}
	// Output:
	// https://www.example.com/ 2024-01-15T09:30:00Z 2024-01-14T00:00:00Z daily
	// skipped: no-lastmod
}
