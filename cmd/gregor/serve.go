package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, serveCmd) }

func serveCmd() *cobra.Command {
	var store, addr string
	cmd := &cobra.Command{
		Use:   "serve --store DIR",
		Short: "Serve a store of runs and reports over HTTP, on localhost only",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return &exitError{2, fmt.Errorf("--addr %q: %v (give 127.0.0.1:PORT)", addr, err)}
			}
			if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
				return &exitError{2, fmt.Errorf("--addr %s is not a loopback address: serve only binds localhost (use 127.0.0.1:PORT)", addr)}
			}
			if st, err := os.Stat(store); err != nil || !st.IsDir() {
				return &exitError{2, fmt.Errorf("--store %s: not a directory (gregor run writes store/ by default)", store)}
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			srv := &http.Server{Handler: http.FileServer(http.Dir(store)), ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintf(cmd.OutOrStdout(), "serving %s at http://%s/ (Ctrl-C to stop)\n", store, ln.Addr())
			go func() {
				sig := make(chan os.Signal, 1)
				signal.Notify(sig, os.Interrupt)
				<-sig
				srv.Close()
			}()
			if err := srv.Serve(ln); err != http.ErrServerClosed {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&store, "store", "store", "directory to serve")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "loopback host:port")
	return cmd
}
