package parse

import "testing"

func FuzzCDX(f *testing.F) {
	fuzzLines(f, "cdx", Config{},
		" CDX N b a m s k r M S V g",
		"org,iana)/ 20140126200624 http://www.iana.org/ text/html 200 OSSAPWJ23L56IYVRW3GFEAR4MCJMGPTB - - 2258 334 iana.warc.gz",
		"org,iana)/x 20140126200912 http://www.iana.org/x warc/revisit - LNMEDYOENSOEI5VPADCKL3CB6N3GWXPR - - 546 667073 iana.warc.gz",
		"com,cnn)/ 20010410213930 http://www.cnn.com:80/ text/html 200 YTEQQRWKL47VHUWFV2NXX7XLEOHMNWZ6 12942",
		"com,dw)/ 20191001000000 http://dw.com/ unk 301 OSSAPWJ23L56IYVRW3GFEAR4MCJMGPTB 1",
		" CDX b A k",
		"com,ex)/a?b=1 20191006000000 - text/html 200 - - - 1 2 f")
}

func FuzzCDXJ(f *testing.F) {
	fuzzLines(f, "cdxj", Config{},
		`com,example)/ 20140127171200 {"url": "http://example.com", "mime": "text/html", "status": "200", "digest": "B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A", "length": "1046", "offset": "334", "filename": "dupes.warc.gz"}`,
		`com,example)/ 20140127171251 {"url": "http://example.com", "mime": "warc/revisit", "digest": "B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A"}`,
		`com,example)/a 20140127171252 {"extra": {"a": [1, "}"]}, "status": 404, "url": "http:\/\/example.com\/a"}`,
		`!meta 0 {"format": "cdxj-gzip-1.0"}`)
}
