// Command payrecon keeps a PostgreSQL payments table honest against Stripe.
// Run `payrecon --help` for the commands; README.md is the operator's guide.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// run is the whole program, callable from tests: arguments, environment
// and output are parameters, and it returns instead of exiting.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return newApp(getenv, stdout, stderr).run(ctx, args)
}
