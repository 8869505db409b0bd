package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/millwright-dev/millwright/internal/version"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// httpShutdownTimeout bounds the graceful stop of a program's HTTP server.
const httpShutdownTimeout = 5 * time.Second

// PluginFlags are the flags every driver plugin program has (the sim, the
// libvirt driver): where it serves, the name it serves under, its logs.
type PluginFlags struct {
	// Endpoint serves the driver: unix:///path.sock or tcp://host:port.
	// Empty: $MILLWRIGHT_DRIVER_ENDPOINT.
	Endpoint string
	// Name is the driver's name, as MachineClass spec.provider names it.
	Name string
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// LogFormat is text or json.
	LogFormat string
}

// NewPluginFlags returns the defaults: the driver's name, info, text.
func NewPluginFlags(name string) PluginFlags {
	return PluginFlags{Name: name, LogLevel: "info", LogFormat: "text"}
}

// AddFlags defines the plugin flags on fs, bound to p; p's values are the
// defaults.
func (p *PluginFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&p.Endpoint, "endpoint", p.Endpoint, "where to serve the driver: unix:///path.sock or tcp://host:port (default $MILLWRIGHT_DRIVER_ENDPOINT)")
	fs.StringVar(&p.Name, "name", p.Name, "the driver's name, as MachineClass spec.provider names it")
	fs.StringVar(&p.LogLevel, "log-level", p.LogLevel, "debug, info, warn or error")
	fs.StringVar(&p.LogFormat, "log-format", p.LogFormat, "text or json")
}

// Check records the plugin flags' problems in c; an empty Endpoint is taken
// from the environment first.
func (p *PluginFlags) Check(c *Checks) {
	if err := ServeEndpoint(&p.Endpoint); err != nil {
		c.Bad("endpoint", "%v", err)
	}
	if p.Name == "" {
		c.Bad("name", "must not be empty")
	}
	if _, err := ParseLevel(p.LogLevel); err != nil {
		c.Bad("log-level", "%v", err)
	}
	if err := CheckLogFormat(p.LogFormat); err != nil {
		c.Bad("log-format", "%v", err)
	}
}

// Checks collects a command line's problems, one line per flag, so a user
// sees them all at once.
type Checks struct{ errs []error }

// Bad records that --flag is wrong, and why.
func (c *Checks) Bad(flag, format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("--%s: %s", flag, fmt.Sprintf(format, args...)))
}

// Err is every problem recorded, as one UsageError; nil when none was.
func (c *Checks) Err() error {
	if len(c.errs) == 0 {
		return nil
	}
	return &UsageError{Err: errors.Join(c.errs...)}
}

// PluginCommand completes cmd (its Use, Short, Long, Example and flags set
// by the caller) as a driver plugin's command. It takes flags only; it
// returns errors instead of printing them, a bad command line as a
// UsageError; validate runs first, then run, with the logger of the
// plugin's --log-level and --log-format writing to logOut. That logger is
// also made the default: pkg/driver's server logs through it. Execute the
// command with ExecuteContext: the context's end is the graceful shutdown.
func PluginCommand(cmd *cobra.Command, logOut io.Writer, p *PluginFlags, validate func() error,
	run func(context.Context, *slog.Logger) error) *cobra.Command {
	cmd.Args = NoArgs
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := validate(); err != nil {
			return err
		}
		log := NewLogger(logOut, p.LogLevel, p.LogFormat)
		slog.SetDefault(log)
		return run(cmd.Context(), log)
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{Err: err} })
	return cmd
}

// ServeHTTP serves h on lis in g until ctx ends, then shuts the server
// down gracefully. what names the server in errors and logs.
func ServeHTTP(ctx context.Context, g *errgroup.Group, log *slog.Logger, what string, lis net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Info("serving "+what, "address", lis.Addr().String())
	g.Go(func() error {
		if err := srv.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
		defer cancel()
		return srv.Shutdown(sctx)
	})
}

// Main runs a program's command until SIGINT or SIGTERM (a second one
// exits at once), prints its error prefixed by name, and exits with
// ExitCode. Every program gets --version (cobra's) from here.
func Main(name string, cmd *cobra.Command) {
	if cmd.Version == "" {
		cmd.Version = version.String()
	}
	err := cmd.ExecuteContext(ctrl.SetupSignalHandler())
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
	}
	os.Exit(ExitCode(err))
}

// HealthHandler answers a driver program's /healthz (the process serves)
// and /readyz: ready while ready answers nil within timeout, else 503
// with what ready said (the driver's code and message).
func HealthHandler(timeout time.Duration, ready func(context.Context) error) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		if err := ready(ctx); err != nil {
			http.Error(w, driver.CodeOf(err).String()+": "+driver.MessageOf(err), http.StatusServiceUnavailable)
			return
		}
		_, _ = fmt.Fprintln(w, "ok")
	})
	return mux
}
