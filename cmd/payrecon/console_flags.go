package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// consoleFlags configure the admin listener and the console's login.
type consoleFlags struct {
	AdminAddr           string `name:"admin-addr" env:"PAYRECON_ADMIN_ADDR" default:"${admin_addr_default}" help:"Admin address, for operators only: the console (/console/), River's dashboard (/riverui/), /metrics, /healthz, /readyz. Without a console password it must be loopback."`
	ConsolePassword     string `name:"console-password" env:"PAYRECON_CONSOLE_PASSWORD" placeholder:"PASSWORD" help:"Password of the console and River's dashboard (prefer the environment variable or the file: flags show in ps). Unset: open, loopback only."`
	ConsolePasswordFile string `name:"console-password-file" env:"PAYRECON_CONSOLE_PASSWORD_FILE" placeholder:"PATH" help:"Read the console password from this file (one line; a trailing newline is ignored)."`
	MetricsPublic       bool   `name:"metrics-public" env:"PAYRECON_METRICS_PUBLIC" help:"Serve the admin address's /metrics without a login although a console password is set. Off (the default): scrapers send the console password by HTTP basic auth (any user name)."`
}

// password returns the console password from the flag, the environment or
// the file; both at once is a usage error.
func (f consoleFlags) password() (string, error) {
	if f.ConsolePasswordFile == "" {
		return f.ConsolePassword, nil
	}
	if f.ConsolePassword != "" {
		return "", usageError{errors.New("set either --console-password (PAYRECON_CONSOLE_PASSWORD) or --console-password-file (PAYRECON_CONSOLE_PASSWORD_FILE), not both")}
	}
	b, err := os.ReadFile(f.ConsolePasswordFile)
	if err != nil {
		return "", configError{fmt.Errorf("read the console password file: %w", err)}
	}
	p := strings.TrimRight(string(b), "\r\n")
	if p == "" {
		return "", configError{fmt.Errorf("the console password file %s is empty", f.ConsolePasswordFile)}
	}
	if strings.ContainsAny(p, "\r\n") {
		return "", configError{fmt.Errorf("the console password file %s has more than one line", f.ConsolePasswordFile)}
	}
	return p, nil
}

// describe says whether a password is set and where from, never what it is.
func (f consoleFlags) describe() string {
	switch {
	case f.ConsolePasswordFile != "":
		return "(set, from " + f.ConsolePasswordFile + ")"
	case f.ConsolePassword != "":
		return "(set)"
	}
	return "(unset: console open, loopback only)"
}

// describeMetrics says who may read /metrics.
func (f consoleFlags) describeMetrics() string {
	switch {
	case f.ConsolePassword == "" && f.ConsolePasswordFile == "":
		return "open (no console password; loopback Host names only)"
	case f.MetricsPublic:
		return "public (no login)"
	}
	return "the console password (HTTP basic auth) or a console session"
}
