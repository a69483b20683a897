//! What was achieved (CONTRACT.md §6): guarantee bits, level and the compile report.

use std::fmt;

use serde::Serialize;

use crate::access::Isolation;

/// Named guarantee bits; each is claimed only when measured (CONTRACT.md §6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Guarantees {
    /// Bit 0 (1): the process runs in its own OS confinement domain.
    pub process_boundary: bool,
    /// Bit 1 (2): every write the effective policy does not allow is blocked.
    pub write_boundary: bool,
    /// Bit 2 (4): every read the effective policy does not allow is blocked.
    pub read_boundary: bool,
    /// Bit 3 (8): the child environment is exactly the scrubbed one.
    pub env_scrub: bool,
    /// Bit 4 (16): egress is closed except what policy or a grant opens.
    pub network_boundary: bool,
    /// Bit 5 (32): egress is scoped by destination address.
    pub address_network: bool,
    /// Bit 6 (64): cgroup limits were applied and read back.
    pub resource_limits: bool,
    /// Bit 7 (128): egress goes only through the authenticated proxy.
    pub target_network: bool,
}

const NAMES: [&str; 8] = [
    "process-boundary",
    "write-boundary",
    "read-boundary",
    "env-scrub",
    "network-boundary",
    "address-network",
    "resource-limits",
    "target-network",
];

impl Guarantees {
    fn flags(&self) -> [bool; 8] {
        [
            self.process_boundary,
            self.write_boundary,
            self.read_boundary,
            self.env_scrub,
            self.network_boundary,
            self.address_network,
            self.resource_limits,
            self.target_network,
        ]
    }

    /// The bit-mask form (bit 0 = `process-boundary` … bit 7 = `target-network`).
    pub fn bits(&self) -> u64 {
        self.flags().iter().enumerate().filter(|(_, on)| **on).fold(0, |acc, (i, _)| acc | (1 << i))
    }

    /// From the bit-mask form; unknown bits are ignored.
    pub fn from_bits(b: u64) -> Self {
        let on = |i: u32| b & (1 << i) != 0;
        Guarantees {
            process_boundary: on(0),
            write_boundary: on(1),
            read_boundary: on(2),
            env_scrub: on(3),
            network_boundary: on(4),
            address_network: on(5),
            resource_limits: on(6),
            target_network: on(7),
        }
    }

    /// Whether every bit of `other` is set here.
    pub fn contains(&self, other: Guarantees) -> bool {
        self.bits() & other.bits() == other.bits()
    }

    /// The names of the set bits, in bit order.
    pub fn names(&self) -> Vec<&'static str> {
        self.flags().iter().zip(NAMES).filter(|(on, _)| **on).map(|(_, name)| name).collect()
    }

    /// The bit for one name (`"read-boundary"` → `Some(4)`).
    pub fn bit_for_name(name: &str) -> Option<u64> {
        NAMES.iter().position(|n| *n == name).map(|i| 1 << i)
    }
}

/// How much of the boundary is in force. Ordered `None < Degraded < Full`.
#[repr(u8)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// No confinement (Unconfined).
    #[default]
    None = 0,
    /// Confined, with a layer (Landlock or seccomp) missing.
    Degraded = 1,
    /// Every layer in force.
    Full = 2,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::None => "none",
            Level::Degraded => "degraded",
            Level::Full => "full",
        })
    }
}

/// The status of one report entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// In force as asked.
    Enforced,
    /// In force and tighter than asked.
    Narrowed,
    /// Not in force.
    Unenforced,
    /// A named, fixed carve-out gives more than asked.
    Widened,
    /// Nothing to enforce: the profile leaves that axis open.
    Vacuous,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Enforced => "enforced",
            Status::Narrowed => "narrowed",
            Status::Unenforced => "unenforced",
            Status::Widened => "widened",
            Status::Vacuous => "vacuous",
        })
    }
}

/// One feature of the report: lowercase kebab-case name, status, and a detail for people.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct ReportEntry {
    /// Lowercase kebab-case feature name.
    pub feature: String,
    /// What was achieved.
    pub status: Status,
    /// For people; code never matches it.
    pub detail: String,
}

impl ReportEntry {
    /// A new entry.
    pub fn new(feature: &str, status: Status, detail: impl Into<String>) -> Self {
        ReportEntry { feature: feature.to_owned(), status, detail: detail.into() }
    }
}

/// Every narrowing, widening and missing layer, one entry per feature, in a stable order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct CompileReport {
    /// The entries.
    pub entries: Vec<ReportEntry>,
}

impl CompileReport {
    /// The entry for a feature, if any.
    pub fn get(&self, feature: &str) -> Option<&ReportEntry> {
        self.entries.iter().find(|e| e.feature == feature)
    }

    /// Adds or replaces the entry for `entry.feature`, keeping its position.
    pub fn set(&mut self, entry: ReportEntry) {
        match self.entries.iter_mut().find(|e| e.feature == entry.feature) {
            Some(slot) => *slot = entry,
            None => self.entries.push(entry),
        }
    }
}

/// Checks the self-consistency invariants of CONTRACT.md §6 for a (level, guarantees) pair and,
/// where given, the isolation and report. Returns every violated invariant, by name.
pub fn check_invariants(
    level: Level,
    g: Guarantees,
    isolation: Option<Isolation>,
    report: Option<&CompileReport>,
) -> Result<(), Vec<&'static str>> {
    let mut broken = Vec::new();
    if level == Level::None && g.bits() & !Guarantees::from_bits(8).bits() != 0 {
        broken.push("level none allows no bit but env-scrub");
    }
    if g.address_network && !g.network_boundary {
        broken.push("address-network implies network-boundary");
    }
    if g.target_network && !g.network_boundary {
        broken.push("target-network implies network-boundary");
    }
    if g.write_boundary && level < Level::Degraded {
        broken.push("write-boundary implies level at least degraded");
    }
    if level == Level::Full && !g.write_boundary {
        broken.push("level full implies write-boundary");
    }
    if !g.env_scrub {
        broken.push("env-scrub is always claimed");
    }
    if isolation == Some(Isolation::Sandboxed) && level == Level::None {
        broken.push("a sandboxed profile never has level none");
    }
    if let (Some(isolation), Some(report)) = (isolation, report) {
        if report.entries.is_empty() != (isolation == Isolation::Unconfined) {
            broken.push("the report is empty exactly for unconfined profiles");
        }
        if report.entries.iter().any(|e| e.feature.is_empty() || e.detail.is_empty()) {
            broken.push("report features and details are never empty");
        }
        let mut seen = std::collections::HashSet::new();
        if !report.entries.iter().all(|e| seen.insert(e.feature.as_str())) {
            broken.push("one report entry per feature");
        }
    }
    if broken.is_empty() { Ok(()) } else { Err(broken) }
}
