//! Checks that host memory the allocation table does not know is mapped,
//! so a bad pointer from a C caller becomes an error instead of a crash.
//! Reads /proc/self/maps; only used for ranges outside our allocations.

/// Whether `[addr, addr + len)` is covered by mappings that are readable
/// (and writable, if `write`).
pub fn mapped(addr: u64, len: u64, write: bool) -> bool {
    Maps::read().covers(addr, len, write)
}

/// The process's mappings, read once from /proc/self/maps.
pub struct Maps {
    /// (start, end, readable, writable), sorted by start; None without /proc.
    ranges: Option<Vec<(u64, u64, bool, bool)>>,
}

impl Maps {
    pub fn read() -> Maps {
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
            return Maps { ranges: None };
        };
        let mut ranges: Vec<(u64, u64, bool, bool)> = maps
            .lines()
            .filter_map(|line| {
                let mut cols = line.split_whitespace();
                let (lo, hi) = cols.next()?.split_once('-')?;
                let perms = cols.next()?.as_bytes();
                Some((
                    u64::from_str_radix(lo, 16).ok()?,
                    u64::from_str_radix(hi, 16).ok()?,
                    perms.first() == Some(&b'r'),
                    perms.get(1) == Some(&b'w'),
                ))
            })
            .collect();
        ranges.sort_unstable();
        Maps {
            ranges: Some(ranges),
        }
    }

    /// Whether `[addr, addr + len)` is covered by mappings that are readable
    /// (and writable, if `write`).
    pub fn covers(&self, addr: u64, len: u64, write: bool) -> bool {
        let Some(end) = addr.checked_add(len) else {
            return false;
        };
        if len == 0 {
            return true;
        }
        let Some(ranges) = &self.ranges else {
            // Without /proc we cannot tell; trust the caller as ROCr does.
            return true;
        };
        let mut covered = addr;
        for &(lo, hi, r, w) in ranges {
            if !r || (write && !w) {
                continue;
            }
            if lo > covered {
                if lo >= end {
                    break;
                }
                continue;
            }
            if hi > covered {
                covered = hi;
                if covered >= end {
                    return true;
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::mapped;

    #[test]
    fn stack_is_mapped_and_page_zero_is_not() {
        let x = [0u8; 64];
        assert!(mapped(x.as_ptr() as u64, 64, true));
        assert!(!mapped(16, 8, false));
        assert!(!mapped(u64::MAX - 4, 8, false));
    }

    #[test]
    fn code_is_readable_but_not_writable() {
        let f = mapped as fn(u64, u64, bool) -> bool;
        assert!(mapped(f as usize as u64, 4, false));
        assert!(!mapped(f as usize as u64, 4, true));
    }
}
