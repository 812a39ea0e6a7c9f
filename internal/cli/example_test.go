package cli_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/pctab/pctab/internal/cli"
)

// A program is a table of commands; adding a subcommand is adding an entry.
func Example() {
	greet := &cli.Command{
		Name:  "greet",
		Args:  "[-shout] NAME",
		Short: "greet someone",
		Flags: func(fs *flag.FlagSet) cli.RunFunc {
			shout := fs.Bool("shout", false, "greet loudly")
			return func(env *cli.Env, args []string) error {
				if len(args) != 1 {
					return cli.Usagef("want one NAME, got %d", len(args))
				}
				msg := "hello, " + args[0]
				if *shout {
					msg = strings.ToUpper(msg)
				}
				fmt.Fprintln(env.Stdout, msg)
				return nil
			}
		},
	}
	p := &cli.Program{Name: "hello", Commands: []*cli.Command{greet}}
	ctx := context.Background()
	code := p.Run(ctx, []string{"greet", "-shout", "gopher"}, os.Stdout, os.Stdout)
	fmt.Println("exit", code)
	code = p.Run(ctx, []string{"greet"}, os.Stdout, os.Stdout)
	fmt.Println("exit", code)
	code = p.Run(ctx, []string{"help", "greet"}, os.Stdout, os.Stdout)
	fmt.Println("exit", code)
	// Output:
	// HELLO, GOPHER
	// exit 0
	// hello greet: want one NAME, got 0
	// usage: hello greet [-shout] NAME
	// Run 'hello help greet' for details.
	// exit 2
	// usage: hello greet [-shout] NAME
	//
	// hello greet: greet someone.
	//
	// Flags:
	//   -shout
	//     	greet loudly
	// exit 0
}
