// The MongoDB peer of the test runs: FerretDB (Apache-2.0) embedded as a library, on SQLite, behind a small
// proxy of ours on loopback. Its own main module, because FerretDB's command refuses to start when built
// outside its repository (it checks a version file that only its own build writes).
//
// Why the proxy: FerretDB 1.x runs an update or findAndModify as a read, then a write (no transaction on
// SQLite), so two concurrent updates of one document lose one of them (50 concurrent $inc: 30 counted). On
// MongoDB a single-document update is atomic, and the store port promises it. The proxy runs the writes of
// one collection one at a time (each until its answer), which restores that promise; reads and the writes of
// other collections still run concurrently. FerretDB itself listens only on a Unix socket in the data folder.
//
// Usage: ferretdb-peer -listen 127.0.0.1:0 -data <folder>
// Prints "ready mongodb://<host>:<port>/" on stdout once it accepts connections; stops on SIGINT or SIGTERM.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
	"github.com/FerretDB/wire/wirebson"
)

const (
	opMsg          = 2013
	flagMoreToCome = 1 << 1
	maxMessage     = 48_000_000 // FerretDB's maxMessageSizeBytes
)

// Commands that read a document and write it back (or must not interleave with those).
var writeCommands = map[string]bool{
	"insert": true, "update": true, "delete": true, "findandmodify": true,
	"createindexes": true, "dropindexes": true, "drop": true,
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "TCP address to listen on (loopback)")
	data := flag.String("data", "", "folder of the SQLite files and FerretDB's socket (required)")
	flag.Parse()
	if *data == "" {
		fmt.Fprintln(os.Stderr, "ferretdb-peer: -data <folder> is required")
		os.Exit(2)
	}
	if err := run(*listen, *data); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb-peer:", err)
		os.Exit(1)
	}
}

func run(listen, data string) error {
	socket := filepath.Join(data, "ferretdb.sock")
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{Unix: socket},
		Handler:   "sqlite",
		SQLiteURL: "file:" + data + "/",
		Logger:    logger,
	})
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := f.Run(ctx); err != nil {
			logger.Error("FerretDB stopped", "error", err)
		}
	}()
	f.MongoDBURI() // returns once FerretDB's listener is bound

	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	fmt.Printf("ready mongodb://%s/\n", l.Addr())

	var locks collectionLocks
	for {
		client, err := l.Accept()
		if err != nil {
			break // closed by a signal
		}
		go serve(client, socket, &locks, logger)
	}
	<-done
	return nil
}

// collectionLocks holds one mutex per "<db>.<collection>".
type collectionLocks struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex
}

func (l *collectionLocks) get(key string) *sync.Mutex {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*sync.Mutex{}
	}
	if l.m[key] == nil {
		l.m[key] = new(sync.Mutex)
	}
	return l.m[key]
}

// serve relays one client connection to FerretDB: a request, then its answer (drivers never pipeline on one
// connection), the request's collection locked meanwhile when it is a write.
func serve(client net.Conn, socket string, locks *collectionLocks, logger *slog.Logger) {
	defer client.Close()
	backend, err := net.Dial("unix", socket)
	if err != nil {
		logger.Error("cannot reach FerretDB", "error", err)
		return
	}
	defer backend.Close()
	fromClient, fromBackend := bufio.NewReader(client), bufio.NewReader(backend)
	for {
		request, err := readMessage(fromClient)
		if err != nil {
			return
		}
		key, moreToCome := inspect(request)
		if key != "" {
			lock := locks.get(key)
			lock.Lock()
			err = relay(request, moreToCome, backend, fromBackend, client)
			lock.Unlock()
		} else {
			err = relay(request, moreToCome, backend, fromBackend, client)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				logger.Warn("connection ended", "error", err)
			}
			return
		}
	}
}

func relay(request []byte, moreToCome bool, backend net.Conn, fromBackend *bufio.Reader, client net.Conn) error {
	if _, err := backend.Write(request); err != nil {
		return err
	}
	if moreToCome {
		return nil // the client expects no answer
	}
	for {
		answer, err := readMessage(fromBackend)
		if err != nil {
			return err
		}
		if _, err := client.Write(answer); err != nil {
			return err
		}
		// An answer with moreToCome (exhaust cursors) is followed by more answers.
		if opCode(answer) != opMsg || flags(answer)&flagMoreToCome == 0 {
			return nil
		}
	}
}

// readMessage reads one whole wire-protocol message: a little-endian int32 length (itself included), then the rest.
func readMessage(r *bufio.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.LittleEndian.Uint32(size[:])))
	if n < 16 || n > maxMessage {
		return nil, fmt.Errorf("bad message length %d", n)
	}
	msg := make([]byte, n)
	copy(msg, size[:])
	if _, err := io.ReadFull(r, msg[4:]); err != nil {
		return nil, err
	}
	return msg, nil
}

func opCode(msg []byte) int32 { return int32(binary.LittleEndian.Uint32(msg[12:16])) }

func flags(msg []byte) uint32 {
	if len(msg) < 20 {
		return 0
	}
	return binary.LittleEndian.Uint32(msg[16:20])
}

// inspect returns the "<db>.<collection>" a write command works on ("" for anything else) and whether the
// client expects no answer.
func inspect(msg []byte) (key string, moreToCome bool) {
	if opCode(msg) != opMsg || len(msg) < 21 {
		return "", false
	}
	moreToCome = flags(msg)&flagMoreToCome != 0
	// Sections: kind 0 is the command document; kind 1 (document sequences) are skipped.
	for pos := 20; pos+5 <= len(msg); {
		kind := msg[pos]
		size := int(int32(binary.LittleEndian.Uint32(msg[pos+1 : pos+5])))
		if size < 5 || pos+1+size > len(msg) {
			return "", moreToCome
		}
		if kind == 0 {
			doc, err := wirebson.RawDocument(msg[pos+1 : pos+1+size]).Decode()
			if err != nil {
				return "", moreToCome
			}
			command := doc.Command()
			if !writeCommands[strings.ToLower(command)] {
				return "", moreToCome
			}
			collection, _ := doc.Get(command).(string)
			db, _ := doc.Get("$db").(string)
			return db + "." + collection, moreToCome
		}
		pos += 1 + size
	}
	return "", moreToCome
}
