//! Checks that host memory the allocation table does not know is mapped,
//! so a bad pointer from a C caller becomes an error instead of a crash.
//! Asks the kernel about the range's mappings (PROCMAP_QUERY, Linux 6.11+),
//! else reads all of /proc/self/maps; only used for ranges outside our
//! allocations.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::OnceLock;

/// Whether `[addr, addr + len)` is covered by mappings that are readable
/// (and writable, if `write`).
pub fn mapped(addr: u64, len: u64, write: bool) -> bool {
    // The kernel's yes is final; a no (rare: a bad pointer, a range gone)
    // is confirmed against the whole list, so a query racing another
    // thread's mapping change can never refuse a good range.
    query(addr, len, write) == Some(true) || Maps::read().covers(addr, len, write)
}

/// A test like [`mapped`] for checking many ranges at one moment: the
/// kernel's answer per range where it gives one, else one reading of
/// /proc/self/maps for all of them.
pub fn checker() -> Box<dyn Fn(u64, u64, bool) -> bool> {
    static PROBE: u8 = 0;
    if query(&PROBE as *const u8 as u64, 1, false).is_some() {
        return Box::new(mapped);
    }
    let maps = Maps::read();
    Box::new(move |addr, len, write| maps.covers(addr, len, write))
}

/// `struct procmap_query` (linux/fs.h).
#[repr(C)]
#[derive(Default)]
struct ProcmapQuery {
    size: u64,
    query_flags: u64,
    query_addr: u64,
    vma_start: u64,
    vma_end: u64,
    vma_flags: u64,
    vma_page_size: u64,
    vma_offset: u64,
    inode: u64,
    dev_major: u32,
    dev_minor: u32,
    vma_name_size: u32,
    build_id_size: u32,
    vma_name_addr: u64,
    build_id_addr: u64,
}

/// _IOWR('f', 17, struct procmap_query).
const PROCMAP_QUERY: u64 =
    3 << 30 | (std::mem::size_of::<ProcmapQuery>() as u64) << 16 | (b'f' as u64) << 8 | 17;
const VMA_READABLE: u64 = 1;
const VMA_WRITABLE: u64 = 2;

/// [`mapped`] by asking the kernel for the mapping at each address in turn
/// (a few system calls, where reading /proc/self/maps formats every mapping
/// of the process: that was most of a kernel launch's cost in a HIP
/// process, which checks its host ranges before each dispatch). None when
/// the kernel does not answer such queries.
fn query(addr: u64, len: u64, write: bool) -> Option<bool> {
    static MAPS: OnceLock<Option<File>> = OnceLock::new();
    let maps = MAPS
        .get_or_init(|| File::open("/proc/self/maps").ok())
        .as_ref()?;
    extern "C" {
        fn ioctl(fd: i32, request: u64, ...) -> i32;
    }
    let Some(end) = addr.checked_add(len) else {
        return Some(false);
    };
    let flags = VMA_READABLE | if write { VMA_WRITABLE } else { 0 };
    let mut covered = addr;
    while covered < end {
        let mut q = ProcmapQuery {
            size: std::mem::size_of::<ProcmapQuery>() as u64,
            query_flags: flags,
            query_addr: covered,
            ..Default::default()
        };
        // SAFETY: `q` is a struct procmap_query with its size filled in and
        // no name or build-id buffers (sizes 0), so the kernel writes only
        // `q`; the descriptor is open for as long as the process runs.
        let r = unsafe { ioctl(maps.as_raw_fd(), PROCMAP_QUERY, &mut q as *mut ProcmapQuery) };
        if r != 0 {
            // ENOENT: nothing with those permissions covers `covered`.
            // Anything else (ENOTTY, EINVAL: an older kernel): ask /proc.
            let unmapped = std::io::Error::last_os_error().raw_os_error() == Some(2);
            return unmapped.then_some(false);
        }
        if q.vma_start > covered || q.vma_end <= covered {
            return None;
        }
        covered = q.vma_end;
    }
    Some(true)
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
    fn the_kernel_query_agrees_with_proc_maps() {
        let x = vec![0u8; 3 << 20];
        let f = mapped as fn(u64, u64, bool) -> bool;
        let maps = super::Maps::read();
        for (addr, len, write) in [
            (x.as_ptr() as u64, x.len() as u64, true),
            (f as usize as u64, 4, false),
            (f as usize as u64, 4, true),
            (16, 8, false),
            (x.as_ptr() as u64, u64::MAX / 2, false),
        ] {
            if let Some(q) = super::query(addr, len, write) {
                assert_eq!(
                    q,
                    maps.covers(addr, len, write),
                    "{addr:#x}+{len:#x} {write}"
                );
            }
        }
    }

    #[test]
    fn code_is_readable_but_not_writable() {
        let f = mapped as fn(u64, u64, bool) -> bool;
        assert!(mapped(f as usize as u64, 4, false));
        assert!(!mapped(f as usize as u64, 4, true));
    }
}
