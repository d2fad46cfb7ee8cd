package cluster

import (
	"context"
	"fmt"
	"sort"

	"go.temporal.io/server/api/adminservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Several server nodes on one PostgreSQL form one cluster: each runs the
// four services on ports of its own (Options with ClusterAddress set), and
// every service writes a heartbeat row into the cluster_membership table,
// through which a starting node finds the others (ringpop bootstraps from
// the rows heartbeated in the last 20 s) and joins their gossip ring. The
// history shards are split between the history services of the ring, and
// a node that dies (no goodbye: SIGKILL) is declared faulty by the gossip
// after ringpop's suspect period (5 s), when the survivors take its shards
// and its task-queue partitions. The first node must be up before the
// others start: on new databases every starting node writes the cluster
// metadata row, and only one such write may win.

// Admin is a connection to a frontend's admin service, to see the
// cluster's membership as the operators' tools (tdbg) do.
type Admin struct {
	conn   *grpc.ClientConn
	client adminservice.AdminServiceClient
}

// DialAdmin connects to the admin service of the frontend at addr
// (host:port, no TLS: the cluster's frontends listen on loopback).
func DialAdmin(addr string) (*Admin, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dial the Temporal admin service at %s: %w", addr, err)
	}
	return &Admin{conn: conn, client: adminservice.NewAdminServiceClient(conn)}, nil
}

// Close closes the connection.
func (a *Admin) Close() error { return a.conn.Close() }

// Rings are the hosts (their gRPC addresses) in each service's membership
// ring ("frontend", "history", "matching", "worker"), sorted, as the
// frontend that answers sees them.
func (a *Admin) Rings(ctx context.Context) (map[string][]string, error) {
	resp, err := a.client.DescribeCluster(ctx, &adminservice.DescribeClusterRequest{})
	if err != nil {
		return nil, fmt.Errorf("describe the Temporal cluster: %w", err)
	}
	rings := map[string][]string{}
	for _, r := range resp.GetMembershipInfo().GetRings() {
		var hosts []string
		for _, m := range r.GetMembers() {
			hosts = append(hosts, m.GetIdentity())
		}
		sort.Strings(hosts)
		rings[r.GetRole()] = hosts
	}
	return rings, nil
}

// ShardOwners says which history host (its gRPC address) owns each of the
// shards 1..shards: the request for a shard is routed to its owner by the
// ring, and the owner acquires the shard (in PostgreSQL, taking it from a
// dead owner) before it answers. A shard no host can serve yet is an error.
func (a *Admin) ShardOwners(ctx context.Context, shards int32) (map[int32]string, error) {
	owners := make(map[int32]string, shards)
	for id := int32(1); id <= shards; id++ {
		resp, err := a.client.DescribeHistoryHost(ctx, &adminservice.DescribeHistoryHostRequest{ShardId: id})
		if err != nil {
			return owners, fmt.Errorf("history shard %d: %w", id, err)
		}
		owners[id] = resp.GetAddress()
	}
	return owners, nil
}
