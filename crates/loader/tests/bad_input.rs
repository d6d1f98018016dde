//! Code objects the loader must refuse (other targets, corrupt bytes) and the
//! relocation types lld does not emit for the fixtures, applied to a patched fixture.

mod common;
use common::*;
use inlay_loader::ErrorKind;

const E_FLAGS: usize = 48;

fn with_flags(bytes: &[u8], set: impl Fn(u32) -> u32) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let f = u32::from_le_bytes(b[E_FLAGS..E_FLAGS + 4].try_into().unwrap());
    b[E_FLAGS..E_FLAGS + 4].copy_from_slice(&set(f).to_le_bytes());
    b
}

#[test]
fn target_ids_are_checked_with_xnack_and_sramecc() {
    let any = fixture("gfx90a/v5/vector_add.hsaco");
    let load = |bytes: &[u8], target: &str| {
        let (_m, mut exe) = executable();
        exe.load(&agent(target), bytes, None)
            .map(|_| ())
            .map_err(|e| e.kind)
    };
    // Built for xnack/sramecc "any": runs on every gfx90a, nowhere else.
    for t in [
        "gfx90a",
        "gfx90a:xnack+",
        "gfx90a:xnack-:sramecc+",
        "gfx90a:sramecc-",
    ] {
        assert_eq!(load(&any, t), Ok(()), "{t}");
    }
    for t in ["gfx908", "gfx942", "gfx1100"] {
        assert_eq!(load(&any, t), Err(ErrorKind::IncompatibleTarget), "{t}");
    }
    let xnack_on = with_flags(&any, |f| f | 0x300);
    assert_eq!(load(&xnack_on, "gfx90a:xnack+"), Ok(()));
    assert_eq!(
        load(&xnack_on, "gfx90a:xnack-"),
        Err(ErrorKind::IncompatibleTarget)
    );
    let sramecc_off = with_flags(&any, |f| (f & !0xc00) | 0x800);
    assert_eq!(load(&sramecc_off, "gfx90a:sramecc-"), Ok(()));
    assert_eq!(
        load(&sramecc_off, "gfx90a:sramecc+"),
        Err(ErrorKind::IncompatibleTarget)
    );
    let e = {
        let (_m, mut exe) = executable();
        exe.load(
            &agent("gfx90a"),
            &fixture("gfx908/v5/vector_add.hsaco"),
            Some("v.hsaco"),
        )
        .unwrap_err()
    };
    assert!(
        e.to_string().contains("gfx908") && e.to_string().contains("v.hsaco"),
        "{e}"
    );
}

#[test]
fn corrupt_code_objects_are_errors_never_crashes() {
    let a = agent("gfx90a");
    let good = fixture("gfx90a/v5/devlib_lib.hsaco");
    let (_m, mut exe) = executable();
    for bad in [
        &[][..],
        b"\x7fELF",
        &good[..100],
        &good[..good.len() / 2],
        &[0u8; 4096][..],
    ] {
        let e = exe.load(&a, bad, None).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidCodeObject, "{e}");
    }
    // A relocatable object is not loadable.
    let e = exe
        .load(&a, &fixture("gfx90a/v5/prefix_scan.o"), None)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidCodeObject);
    // Every header byte and a stride through the rest, set to 0xff and to 0:
    // each load either works or fails with a value.
    let mut outcomes = (0, 0);
    for i in (0..good.len()).filter(|i| *i < 0x300 || i % 7 == 0) {
        for v in [0xffu8, 0] {
            let mut b = good.clone();
            b[i] = v;
            let (_m, mut exe) = executable();
            match exe.load(&a, &b, None).and_then(|_| exe.freeze()) {
                Ok(()) => outcomes.0 += 1,
                Err(_) => outcomes.1 += 1,
            }
        }
    }
    assert!(outcomes.0 > 0 && outcomes.1 > 0, "{outcomes:?}");
    assert!(exe.code_objects().is_empty());
}

/// The caller's one dynamic relocation (ABS64 against inlay_lib_scale at the
/// GOT slot) patched to each other type the loader applies; the value written
/// is checked against the AMDGPU ELF ABI formula computed here.
#[test]
fn every_relocation_type_writes_what_the_abi_says() {
    let Some(re) = readelf(&fixtures().join("gfx90a/v5/devlib_caller.hsaco")) else {
        return;
    };
    let original = fixture("gfx90a/v5/devlib_caller.hsaco");
    let site = re.relocs[0].offset;
    // The entry's file offset: the 24-byte RELA entry with that r_offset and
    // r_info = symbol 1, ABS64 (readelf's Info column).
    let mut rela = site.to_le_bytes().to_vec();
    rela.extend_from_slice(&((1u64 << 32) | 3).to_le_bytes());
    let entry = original
        .windows(16)
        .position(|w| w == rela.as_slice())
        .expect("rela entry");
    let s = 0x7766_5544_3322_1100u64;
    for (ty, name) in [
        (1u32, "ABS32_LO"),
        (2, "ABS32_HI"),
        (4, "REL32"),
        (5, "REL64"),
        (6, "ABS32"),
        (10, "REL32_LO"),
        (11, "REL32_HI"),
        (13, "RELATIVE64"),
    ] {
        let mut b = original.clone();
        b[entry + 8..entry + 12].copy_from_slice(&ty.to_le_bytes());
        b[entry + 16..entry + 24].copy_from_slice(&(-12i64).to_le_bytes());
        let (memory, mut exe) = executable();
        let a = agent("gfx90a");
        let id = exe
            .load(&a, &b, None)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        exe.define_variable(Some(a.key), "inlay_lib_scale", s, false)
            .unwrap();
        exe.freeze().unwrap();
        let co = exe.code_object(id).unwrap();
        let p = co.load_delta + site;
        let sa = s.wrapping_sub(12);
        let got = read_mem(&memory, p, 8);
        let lo = u64::from(u32::from_le_bytes(got[..4].try_into().unwrap()));
        let all = u64::from_le_bytes(got.try_into().unwrap());
        match ty {
            1 | 6 => assert_eq!(lo, sa & 0xffff_ffff, "{name}"),
            2 => assert_eq!(lo, sa >> 32, "{name}"),
            4 | 10 => assert_eq!(lo, sa.wrapping_sub(p) & 0xffff_ffff, "{name}"),
            11 => assert_eq!(lo, sa.wrapping_sub(p) >> 32, "{name}"),
            5 => assert_eq!(all, sa.wrapping_sub(p), "{name}"),
            13 => assert_eq!(all, co.load_delta.wrapping_sub(12), "{name}"),
            _ => unreachable!(),
        }
    }
    // A type the loader does not apply is refused at load, naming it.
    let mut b = original.clone();
    b[entry + 8..entry + 12].copy_from_slice(&7u32.to_le_bytes());
    let (_m, mut exe) = executable();
    let e = exe.load(&agent("gfx90a"), &b, None).unwrap_err();
    assert!(e.to_string().contains("R_AMDGPU_GOTPCREL"), "{e}");
}

/// A kernel descriptor the target cannot run is refused at load, as an
/// invalid code object (ROCr's status for a code object its loader
/// rejects), with an error naming the kernel and the field; the code
/// object is not loaded, so no kernel object is handed out.
#[test]
fn impossible_kernel_descriptors_are_refused_at_load_naming_the_field() {
    let original = fixture("gfx90a/v5/vector_add.hsaco");
    let co = inlay_codeobj::CodeObject::parse(&original).unwrap();
    let at = co.kernel("vector_add").unwrap().descriptor_file_offset as usize;
    let with = |descriptor: [u8; 64]| {
        let mut b = original.clone();
        b[at..at + 64].copy_from_slice(&descriptor);
        b
    };
    let good: [u8; 64] = original[at..at + 64].try_into().unwrap();
    let mut random = [0u8; 64];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for b in &mut random {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    let mut outside = good;
    outside[16..24].copy_from_slice(&0x4000_0000i64.to_le_bytes());
    let mut wave32 = good;
    wave32[57] |= 1 << 2;
    let mut user_sgprs = good;
    user_sgprs[52] |= 0x1f << 1;
    for (what, descriptor, field) in [
        ("all ones", [0xff; 64], "reserved bytes 12-15"),
        ("all zeros", [0; 64], "KERNEL_CODE_ENTRY_BYTE_OFFSET"),
        ("random bytes", random, ""),
        (
            "an entry outside the code",
            outside,
            "KERNEL_CODE_ENTRY_BYTE_OFFSET",
        ),
        ("wave32 on gfx90a", wave32, "ENABLE_WAVEFRONT_SIZE32"),
        ("31 user SGPRs", user_sgprs, "USER_SGPR_COUNT"),
    ] {
        let (_m, mut exe) = executable();
        let e = exe
            .load(&agent("gfx90a"), &with(descriptor), Some("va.hsaco"))
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidCodeObject, "{what}: {e}");
        let text = e.to_string();
        assert!(
            text.starts_with("va.hsaco: kernel vector_add: descriptor at 0x")
                && text.contains(field),
            "{what}: {text}"
        );
        assert!(
            exe.code_objects().is_empty() && exe.kernels().is_empty(),
            "{what}"
        );
    }
    let (_m, mut exe) = executable();
    exe.load(&agent("gfx90a"), &with(good), None).unwrap();
}
