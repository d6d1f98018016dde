//! The host's promises to tools, tested without running kernels: tools'
//! callbacks for launches on different queues run at the same time (a tool
//! reading its results after one launch holds up no other queue), and each
//! tool is asked whether it wants every launch.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use inlay_runtime::device::{KernelDispatch, NoEmulator};
use inlay_runtime::intercept::{Interceptor, LoadedCode};
use inlay_tools::{Host, Insertions, Kernel, Launch, Outcome, Output, Tool};

fn vector_add() -> Arc<[u8]> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/gfx90a/v5/vector_add.hsaco"
    );
    std::fs::read(path).expect("fixture").into()
}

const OBJECT: u64 = 0x7000_1000;

fn dispatch(queue: u64) -> KernelDispatch {
    KernelDispatch {
        queue,
        address: 0,
        packet_id: 0,
        dimensions: 1,
        workgroup_size: [64, 1, 1],
        grid_size: [64, 1, 1],
        private_segment_size: 0,
        group_segment_size: 0,
        kernel_object: OBJECT,
        kernarg_address: 0,
        raw: [0; 64],
    }
}

/// Two launches' after-launch callbacks must both be running before
/// either returns; counts the launches it saw before.
struct Meeting {
    arrived: Mutex<usize>,
    all_here: Condvar,
    asked: AtomicUsize,
    met: AtomicUsize,
}

impl Tool for Meeting {
    fn name(&self) -> &str {
        "meeting"
    }

    fn before_launch(&self, _launch: &Launch, _out: &Output) -> bool {
        self.asked.fetch_add(1, Ordering::SeqCst);
        false
    }

    fn instrument(
        &self,
        _k: &Kernel<'_>,
        _at: &mut Insertions,
        _out: &Output,
    ) -> Result<(), String> {
        Ok(())
    }

    fn after_launch(&self, _launch: &Launch, o: &Outcome<'_>, _out: &Output) {
        assert!(!o.instrumented() && o.error.is_none());
        let mut n = self.arrived.lock().unwrap();
        *n += 1;
        self.all_here.notify_all();
        let (n, timeout) = self
            .all_here
            .wait_timeout_while(n, Duration::from_secs(10), |n| *n < 2)
            .unwrap();
        if !timeout.timed_out() && *n >= 2 {
            self.met.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[test]
fn launches_on_two_queues_are_reported_at_the_same_time() {
    let tool = Arc::new(Meeting {
        arrived: Mutex::new(0),
        all_here: Condvar::new(),
        asked: AtomicUsize::new(0),
        met: AtomicUsize::new(0),
    });
    struct Shared(Arc<Meeting>);
    impl Tool for Shared {
        fn name(&self) -> &str {
            self.0.name()
        }
        fn before_launch(&self, l: &Launch, out: &Output) -> bool {
            self.0.before_launch(l, out)
        }
        fn instrument(
            &self,
            k: &Kernel<'_>,
            at: &mut Insertions,
            out: &Output,
        ) -> Result<(), String> {
            self.0.instrument(k, at, out)
        }
        fn after_launch(&self, l: &Launch, o: &Outcome<'_>, out: &Output) {
            self.0.after_launch(l, o, out)
        }
    }
    let memory = Arc::new(inlay_vgpu::Memory::new());
    let host = Arc::new(Host::new(
        memory,
        Arc::new(NoEmulator),
        vec![Box::new(Shared(tool.clone()))],
        Output::stderr(),
    ));
    host.executable_frozen(&[LoadedCode {
        bytes: vector_add(),
        load_delta: OBJECT - 0x1000,
        kernels: vec![("vector_add".into(), OBJECT)],
        name: "vector_add.hsaco".into(),
        region: None,
    }]);
    let threads: Vec<_> = [1u64, 2]
        .into_iter()
        .map(|queue| {
            let host = host.clone();
            std::thread::spawn(move || {
                let d = dispatch(queue);
                assert_eq!(host.before_dispatch(&d), None);
                host.after_dispatch(&d, &Ok(None));
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread");
    }
    assert_eq!(tool.asked.load(Ordering::SeqCst), 2);
    assert_eq!(
        tool.met.load(Ordering::SeqCst),
        2,
        "one launch's after-launch callback waited for the other's"
    );
}
