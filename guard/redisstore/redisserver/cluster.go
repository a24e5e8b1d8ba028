package redisserver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// ClusterTimeout bounds how long [StartCluster] waits for a new cluster to
// report cluster_state:ok on every node (on loopback it takes about a
// second: the nodes' gossip round).
const ClusterTimeout = 30 * time.Second

// Cluster is a Redis Cluster of masters on loopback, started by
// [StartCluster]. Its methods are safe for concurrent use.
type Cluster struct {
	// Nodes are the masters: node i serves the i-th of n equal ranges of
	// the slots. Stop or freeze one to take it away from the cluster.
	Nodes []*Server

	bus []int // the nodes' cluster bus ports, in order
}

// StartCluster starts a Redis Cluster of n masters (no replicas), each a
// redis-server with --cluster-enabled yes on a free loopback port, its
// cluster bus on another free port (--cluster-port), its files under
// dir/node<i>, persistence off; args are passed on to every node
// ("--cluster-node-timeout", "2000", say). It splits the 16384 slots into
// n ranges (CLUSTER ADDSLOTSRANGE), gives each node its own config epoch,
// introduces the nodes to the first (CLUSTER MEET) and returns once every
// node reports cluster_state:ok, polling CLUSTER INFO for at most
// [ClusterTimeout]. Without redis-server on the PATH it returns
// [ErrNotFound]; on any other failure it stops what it started. The
// caller stops the cluster ([Cluster.Stop]) and removes dir.
func StartCluster(dir string, n int, args ...string) (*Cluster, error) {
	if n < 1 || n > Slots {
		return nil, fmt.Errorf("redisserver: StartCluster(%d nodes): want 1 to %d", n, Slots)
	}
	dir, err := filepath.Abs(dir) // the nodes chdir to their own
	if err != nil {
		return nil, fmt.Errorf("redisserver: %w", err)
	}
	c := &Cluster{}
	fail := func(err error) (*Cluster, error) { return nil, errors.Join(err, c.Stop()) }
	for i := range n {
		s, bus, err := startNode(filepath.Join(dir, "node"+strconv.Itoa(i)), args)
		if err != nil {
			return fail(err)
		}
		c.Nodes, c.bus = append(c.Nodes, s), append(c.bus, bus)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ClusterTimeout)
	defer cancel()
	clients := make([]*redis.Client, n)
	for i, s := range c.Nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
		defer clients[i].Close()
	}
	for i, cl := range clients {
		first, last := i*Slots/n, (i+1)*Slots/n-1
		if err := cl.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", first, last).Err(); err != nil {
			return fail(fmt.Errorf("redisserver: %s: CLUSTER ADDSLOTSRANGE %d %d: %w", c.Nodes[i].Addr(), first, last, err))
		}
		if err := cl.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fail(fmt.Errorf("redisserver: %s: CLUSTER SET-CONFIG-EPOCH: %w", c.Nodes[i].Addr(), err))
		}
	}
	for i, s := range c.Nodes[1:] {
		// The bus port is given: the default is the node's port + 10000.
		if err := clients[0].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", s.Port(), c.bus[i+1]).Err(); err != nil {
			return fail(fmt.Errorf("redisserver: %s: CLUSTER MEET %s: %w", c.Nodes[0].Addr(), s.Addr(), err))
		}
	}
	if err := waitClusterOK(ctx, clients); err != nil {
		return fail(err)
	}
	return c, nil
}

// startNode starts one cluster node in dir, its bus on a free port of its
// own, which it returns: the default, its port + 10000, may be taken or
// past 65535. A bus port taken before the node binds it makes the start
// fail; it tries a few.
func startNode(dir string, args []string) (*Server, int, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, 0, fmt.Errorf("redisserver: %w", err)
	}
	var err error
	for range 5 {
		var bus int
		if bus, err = freePort(); err != nil {
			return nil, 0, err
		}
		var s *Server
		s, err = Start(dir, append([]string{
			"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus),
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
		}, args...)...)
		if err == nil || errors.Is(err, ErrNotFound) {
			return s, bus, err
		}
	}
	return nil, 0, err
}

// waitClusterOK polls CLUSTER INFO on every node until each reports
// cluster_state:ok, or ctx is done.
func waitClusterOK(ctx context.Context, clients []*redis.Client) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var last string
		ok := true
		for _, cl := range clients {
			info, err := cl.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				ok, last = false, cl.Options().Addr+": "+info
				if err != nil {
					last = cl.Options().Addr + ": " + err.Error()
				}
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redisserver: the cluster did not report cluster_state:ok within %v: %s", ClusterTimeout, last)
		case <-tick.C:
		}
	}
}

// Addrs returns the nodes' host:port, in order.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		addrs[i] = s.Addr()
	}
	return addrs
}

// URL returns the cluster as go-redis's cluster URL
// (redis.ParseClusterURL): the first node's address, the others as addr
// query parameters.
func (c *Cluster) URL() string {
	q := url.Values{}
	for _, a := range c.Addrs()[1:] {
		q.Add("addr", a)
	}
	u := url.URL{Scheme: "redis", Host: c.Nodes[0].Addr(), RawQuery: q.Encode()}
	return u.String()
}

// Stop stops every node (see [Server.Stop]).
func (c *Cluster) Stop() error {
	var errs []error
	for _, s := range c.Nodes {
		errs = append(errs, s.Stop())
	}
	return errors.Join(errs...)
}
