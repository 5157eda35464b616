//! The two deployments the agent serves, which change what a decision does
//! (`Decision::actions`) and how evidence reads: a leaf, so that both
//! `decision` and `evidence` can name it.

/// Whether the node has a peer to hand the tunnel to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topology {
    /// Two nodes share one tunnel; exactly one connector serves.
    SharedTunnel,
    /// Each node has its own tunnel; the Worker chooses between them.
    TunnelPerNode,
}

impl Topology {
    /// The config's `topology` value, as `/health` and the metrics'
    /// `topology` label spell it too.
    pub fn as_str(self) -> &'static str {
        match self {
            Topology::SharedTunnel => "shared-tunnel",
            Topology::TunnelPerNode => "tunnel-per-node",
        }
    }
}
