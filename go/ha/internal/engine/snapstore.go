package engine

// Snapshot stores: where a leader writes its master's snapshots and every
// node reads the latest one from (the etcd record names its location).
// DirStore, a directory, is the default; any store all nodes can reach
// (a shared filesystem, an object store) implements SnapshotStore.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// SnapshotStore holds snapshots by journal sequence. Its methods may be
// called from several goroutines at once, and by several nodes (processes)
// sharing it: Put never overwrites what another Put wrote. A store may
// also have a method Size(ctx, location) (int64, error) that opens a
// snapshot without reading it (DirStore has): CheckPublishedSnapshot uses
// it instead of Get.
type SnapshotStore interface {
	// Put stores data, the snapshot that includes every journal record up
	// to seq, durably (it survives a crash once Put returned), under a
	// location no other Put returns, and returns that location.
	Put(ctx context.Context, seq uint64, data []byte) (location string, err error)
	// Get returns the bytes stored at location.
	Get(ctx context.Context, location string) ([]byte, error)
	// Delete removes the snapshot at location; an absent one is no error.
	Delete(ctx context.Context, location string) error
	// List returns every stored snapshot, by ascending sequence.
	List(ctx context.Context) ([]StoredSnapshot, error)
}

// StoredSnapshot is one entry of SnapshotStore.List.
type StoredSnapshot struct {
	Seq      uint64
	Location string
}

// Prune deletes, of the snapshots in store older than the one at current
// (whose sequence is seq), all but keep-1 of them, so keep snapshots remain
// counting current: first prev, the snapshot published before current
// (when known and still stored), then the newest others. A snapshot kept
// because its publication's answer was lost, and that no record ever
// named, so never displaces the last one published before (with the
// default keep of 2 it did: the fallback went and the file no standby can
// use stayed). It never deletes current nor a snapshot with a sequence >=
// seq: that may be another leader's, not published yet.
func Prune(ctx context.Context, store SnapshotStore, keep int, current string, seq uint64, prev string) (deleted int, err error) {
	all, err := store.List(ctx)
	if err != nil {
		return 0, err
	}
	var older []StoredSnapshot // ascending sequence, as List returns them
	for _, s := range all {
		if s.Location != current && s.Seq < seq {
			older = append(older, s)
		}
	}
	room := max(keep-1, 0)
	kept := make(map[string]bool, room)
	if room > 0 && prev != "" && slices.ContainsFunc(older, func(s StoredSnapshot) bool { return s.Location == prev }) {
		kept[prev] = true
		room--
	}
	for i := len(older) - 1; i >= 0 && room > 0; i-- {
		if !kept[older[i].Location] {
			kept[older[i].Location] = true
			room--
		}
	}
	for _, s := range older {
		if kept[s.Location] {
			continue
		}
		if err := store.Delete(ctx, s.Location); err != nil {
			return deleted, err
		}
		deleted++
	}
	return deleted, nil
}

// DirStore keeps snapshots as files in a directory:
// snapshot-<seq, 20 digits>-<16 random hex digits>.mcms, each written to a
// temporary file, synced, renamed into place and the directory synced, so
// a crash leaves a whole file or none. The location is the file's name.
// Every node of a cluster must reach the same directory (one machine, or
// a shared filesystem).
type DirStore struct {
	dir string
}

const (
	snapFilePrefix = "snapshot-"
	snapFileSuffix = ".mcms"
)

// NewDirStore returns the store in dir, creating the directory (0700) if
// it does not exist.
func NewDirStore(dir string) (*DirStore, error) {
	if dir == "" {
		return nil, errors.New("ha: snapshot directory: the path is empty")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ha: snapshot directory: %w", err)
	}
	return &DirStore{dir: dir}, nil
}

// Dir is the store's directory.
func (d *DirStore) Dir() string { return d.dir }

// parseSnapName returns the sequence a file name of the store carries.
func parseSnapName(name string) (uint64, bool) {
	rest, ok := strings.CutPrefix(name, snapFilePrefix)
	if !ok {
		return 0, false
	}
	rest, ok = strings.CutSuffix(rest, snapFileSuffix)
	if !ok || len(rest) != 20+1+16 || rest[20] != '-' {
		return 0, false
	}
	if _, err := hex.DecodeString(rest[21:]); err != nil {
		return 0, false
	}
	seq, err := strconv.ParseUint(rest[:20], 10, 64)
	return seq, err == nil
}

// path checks that location is a name of this store (no path elsewhere)
// and returns the file's path.
func (d *DirStore) path(location string) (string, error) {
	if _, ok := parseSnapName(location); !ok {
		return "", fmt.Errorf("ha: %q is not a snapshot location of this store", location)
	}
	return filepath.Join(d.dir, location), nil
}

// Put implements SnapshotStore.
func (d *DirStore) Put(ctx context.Context, seq uint64, data []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var nonce [8]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", fmt.Errorf("ha: snapshot name: %w", err)
	}
	name := fmt.Sprintf("%s%020d-%s%s", snapFilePrefix, seq, hex.EncodeToString(nonce[:]), snapFileSuffix)
	tmp, err := os.CreateTemp(d.dir, ".tmp-"+name+"-*")
	if err != nil {
		return "", fmt.Errorf("ha: writing snapshot %d: %w", seq, err)
	}
	committed := false
	defer func() {
		if !committed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return "", fmt.Errorf("ha: writing snapshot %d: %w", seq, err)
	}
	if err := tmp.Sync(); err != nil {
		return "", fmt.Errorf("ha: syncing snapshot %d: %w", seq, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("ha: writing snapshot %d: %w", seq, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(d.dir, name)); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("ha: placing snapshot %d: %w", seq, err)
	}
	committed = true
	if err := syncDir(d.dir); err != nil {
		return "", fmt.Errorf("ha: syncing the snapshot directory: %w", err)
	}
	return name, nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Get implements SnapshotStore.
func (d *DirStore) Get(ctx context.Context, location string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := d.path(location)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("ha: reading snapshot: %w", err)
	}
	return b, nil
}

// Size opens the snapshot at location and returns its size, without
// reading it.
func (d *DirStore) Size(ctx context.Context, location string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	p, err := d.path(location)
	if err != nil {
		return 0, err
	}
	f, err := os.Open(p)
	if err != nil {
		return 0, fmt.Errorf("ha: opening snapshot: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("ha: opening snapshot: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("ha: snapshot %q is not a regular file", location)
	}
	return fi.Size(), nil
}

// sizer is a store with a Size method (SnapshotStore's documentation).
type sizer interface {
	Size(ctx context.Context, location string) (int64, error)
}

// CheckPublishedSnapshot checks that store can open the snapshot the
// cluster under prefix published, as a node must to start from it: the
// record parses as a node reads it, and the store has a snapshot of the
// record's size at its location (Size when the store has it, else Get).
// It returns nil when no snapshot was published, an error wrapping
// ErrSnapshot when the record does not parse or the snapshot cannot be
// opened, or etcd's error. The checksum is not checked: a node retries a
// corrupt snapshot until a newer one is published. A record republished
// meanwhile (the snapshot it named pruned) is read again.
func CheckPublishedSnapshot(ctx context.Context, cli *clientv3.Client, prefix string, store SnapshotStore) error {
	key := SnapshotKey(prefix)
	for attempt := 1; ; attempt++ {
		resp, err := cli.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("ha: reading the snapshot record %s: %w", key, err)
		}
		if len(resp.Kvs) == 0 {
			return nil
		}
		rec, err := decodeRecord(resp.Kvs[0].Value)
		if err != nil {
			return fmt.Errorf("%w (%s)", err, key)
		}
		if err = openSnapshot(ctx, store, rec); err == nil {
			return nil
		}
		again, gerr := cli.Get(ctx, key)
		if gerr != nil {
			return fmt.Errorf("ha: reading the snapshot record %s: %w", key, gerr)
		}
		if attempt < 3 && len(again.Kvs) == 1 && again.Kvs[0].ModRevision != resp.Kvs[0].ModRevision {
			continue
		}
		return fmt.Errorf("%w: cannot open the published snapshot %s (sequence %d, by node %q): %w", ErrSnapshot, rec.Location, rec.Seq, rec.Node, err)
	}
}

// openSnapshot checks that store has a snapshot of rec's size at its
// location.
func openSnapshot(ctx context.Context, store SnapshotStore, rec SnapshotRecord) error {
	if store == nil {
		return errors.New("no snapshot store")
	}
	var size int64
	if s, ok := store.(sizer); ok {
		n, err := s.Size(ctx, rec.Location)
		if err != nil {
			return err
		}
		size = n
	} else {
		b, err := store.Get(ctx, rec.Location)
		if err != nil {
			return err
		}
		size = int64(len(b))
	}
	if size != rec.Size {
		return fmt.Errorf("%d bytes, the record says %d", size, rec.Size)
	}
	return nil
}

// Delete implements SnapshotStore.
func (d *DirStore) Delete(ctx context.Context, location string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := d.path(location)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("ha: deleting snapshot: %w", err)
	}
	return nil
}

// List implements SnapshotStore (files not named by Put are ignored).
func (d *DirStore) List(ctx context.Context) ([]StoredSnapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, fmt.Errorf("ha: listing snapshots: %w", err)
	}
	var out []StoredSnapshot
	for _, e := range entries {
		if seq, ok := parseSnapName(e.Name()); ok && e.Type().IsRegular() {
			out = append(out, StoredSnapshot{Seq: seq, Location: e.Name()})
		}
	}
	slices.SortFunc(out, func(a, b StoredSnapshot) int {
		if a.Seq != b.Seq {
			if a.Seq < b.Seq {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Location, b.Location)
	})
	return out, nil
}
