package population_test

import (
	"fmt"
	"strings"

	"github.com/pctab/pctab/internal/population"
)

func ExampleParsePrograms() {
	ps, err := population.ParsePrograms(strings.NewReader(`
# name  module  package  version  [args]
gojq   github.com/itchyny/gojq  cmd/gojq  v0.12.17
caddy  github.com/caddyserver/caddy/v2  cmd/caddy  v2.11.9  version
`))
	if err != nil {
		fmt.Println(err)
	}
	for _, p := range ps {
		fmt.Println(p.Name, p.ImportPath()+"@"+p.Version, p.Args)
	}
	// Output:
	// gojq github.com/itchyny/gojq/cmd/gojq@v0.12.17 [--version]
	// caddy github.com/caddyserver/caddy/v2/cmd/caddy@v2.11.9 [version]
}
