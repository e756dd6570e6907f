package parse_test

import (
	"fmt"

	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/records"
)

func ExampleNew() {
	p, err := parse.New("squid", parse.Config{})
	if err != nil {
		panic(err)
	}
	var obs records.Observation
	for _, line := range []string{
		"1157689320.343   1357 10.105.21.199 TCP_REFRESH_UNMODIFIED/304 214 GET HTTP://WWW.Example.COM:80/a/./b#top - DIRECT/1.2.3.4 -",
		"1157689312.049   5006 10.105.21.199 TCP_MISS/200 19763 CONNECT login.example.com:443 - DIRECT/1.2.3.4 -",
		"not a squid line",
	} {
		err := p.Parse([]byte(line), &obs)
		switch {
		case err == nil:
			fmt.Println(obs.Object, obs.Site, obs.Time.Format("2006-01-02T15:04:05.000Z07:00"), obs.Kind, obs.Changed == records.Unchanged)
		case parse.IsSkip(err):
			fmt.Println("skipped:", parse.Reason(err))
		default:
			fmt.Println("rejected:", parse.Reason(err))
		}
	}
	// Output:
	// http://www.example.com/a/b www.example.com 2006-09-08T04:22:00.343Z revalidation true
	// skipped: connect
	// rejected: fields
}

func ExampleNewCanonicalizer() {
	c := parse.NewCanonicalizer(parse.ProfileChangerate, 0)
	for _, u := range []string{"HTTP://Example.COM:80/%7euser/./x?q=1#frag", "https://bücher.example/ä"} {
		obj, site, err := c.Canonical([]byte(u))
		fmt.Println(obj, site, err)
	}
	// Output:
	// http://example.com/~user/x?q=1 example.com <nil>
	// https://xn--bcher-kva.example/%C3%A4 xn--bcher-kva.example <nil>
}
