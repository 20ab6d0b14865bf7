//! Packing rules and applying them to a frame's registers.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::CopyEnd;

fn stack(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn copy(bytes: &[u8]) -> StackCopy<'_> {
    StackCopy {
        base: 0x2000,
        bytes,
        end: CopyEnd::MappingEnd,
    }
}

/// A frame's registers with rbx and r11 unknown.
fn state(ip: u64, sp: u64, bp: Option<u64>) -> State {
    State {
        ip,
        sp,
        bp,
        rbx: Rbx::Unknown,
        r11: None,
    }
}

/// rbx's value in a frame, read from its slot if saved.
fn rbx_of(st: &State, stack: &StackCopy) -> Option<u64> {
    st.reg(Reg::Rbx, stack).ok()
}

fn cfa_in(reg: Reg, off: i32) -> Cfa {
    Cfa::Reg {
        reg,
        off,
        deref: false,
    }
}

#[test]
fn packing_round_trips() {
    let values = [
        Value::Undefined,
        Value::Same,
        Value::saved(Base::Cfa, -8),
        Value::At {
            base: Base::Sp,
            off: 168,
            loads: 1,
        },
        Value::At {
            base: Base::Bp,
            off: -32768,
            loads: 2,
        },
        Value::At {
            base: Base::Cfa,
            off: 0,
            loads: 0,
        },
    ];
    for v in values {
        let cfa = Cfa::Reg {
            reg: Reg::Bp,
            off: -100_000,
            deref: true,
        };
        let r = Rule::new(cfa, v, v, v, Value::Same, true).unwrap();
        assert_eq!(
            (r.cfa(), r.ra(), r.bp(), r.sp(), r.rbx(), r.signal),
            (cfa, v, v, v, Value::Same, true)
        );
    }
    for reg in [Reg::Rbx, Reg::R11] {
        let cfa = cfa_in(reg, 536_632);
        let r = Rule::new(
            cfa,
            Value::Undefined,
            Value::Same,
            SP_IS_CFA,
            Value::Same,
            false,
        );
        assert_eq!(r.unwrap().cfa(), cfa);
        // no CFI reads a CFA through them: not supported
        let deref = Cfa::Reg {
            reg,
            off: 8,
            deref: true,
        };
        let r = Rule::new(
            deref,
            Value::Undefined,
            Value::Same,
            SP_IS_CFA,
            Value::Same,
            false,
        );
        assert!(r.is_none());
    }
    let plt = Rule::new(
        Cfa::Plt { threshold: 11 },
        Value::Same,
        Value::Same,
        SP_IS_CFA,
        Value::Same,
        false,
    );
    assert_eq!(plt.unwrap().cfa(), Cfa::Plt { threshold: 11 });
    // offsets beyond 16 bits and loads beyond 2 do not pack
    let far = Value::saved(Base::Cfa, 40_000);
    let plt0 = Cfa::Plt { threshold: 0 };
    assert!(Rule::new(plt0, far, Value::Same, SP_IS_CFA, Value::Same, false).is_none());
    let deep = Value::At {
        base: Base::Sp,
        off: 0,
        loads: 3,
    };
    assert!(Rule::new(plt0, deep, Value::Same, SP_IS_CFA, Value::Same, false).is_none());
    assert_eq!(Rule::FRAME_POINTER.bp(), Value::saved(Base::Cfa, -16));
    assert_eq!(Rule::JUST_RETURN.cfa(), cfa_in(Reg::Sp, 8));
    assert_eq!(
        (Rule::FRAME_POINTER.rbx(), Rule::JUST_RETURN.rbx()),
        (Value::Undefined, Value::Same)
    );
}

#[test]
fn rbx_rules_pack_into_a_byte_or_become_unknown() {
    let at = |base, off, loads| Value::At { base, off, loads };
    let kept = [
        Value::Same,
        Value::Undefined,
        Value::saved(Base::Cfa, -16),
        Value::saved(Base::Cfa, -56),
        Value::saved(Base::Cfa, -256),
        Value::saved(Base::Cfa, 248),
        Value::saved(Base::Cfa, 0),
        at(Base::Sp, 128, 1), // __restore_rt: uc_mcontext.gregs[REG_RBX]
        at(Base::Bp, -8, 1),  // gcc's DRAP
    ];
    for v in kept {
        assert_eq!(Rule::JUST_RETURN.with_rbx(v).rbx(), v, "{v:?}");
    }
    let lost = [
        Value::saved(Base::Cfa, -264), // beyond 32 words
        Value::saved(Base::Cfa, 256),
        Value::saved(Base::Cfa, -12), // not a slot
        at(Base::Cfa, -16, 0),        // val_offset
        at(Base::Sp, 8, 2),
    ];
    for v in lost {
        let r = Rule::JUST_RETURN.with_rbx(v);
        // the rule itself still compiles: rbx is only unknown
        assert_eq!(
            (r.rbx(), r.ra(), r.cfa()),
            (
                Value::Undefined,
                Rule::JUST_RETURN.ra(),
                Rule::JUST_RETURN.cfa()
            ),
            "{v:?}"
        );
    }
}

#[test]
fn frame_pointer_rule() {
    let bytes = stack(&[0xaa, 0x2000 + 32, 0x4444, 0, 0]);
    let mut st = state(0x1234, 0x2000, Some(0x2008));
    st.rbx = Rbx::Value(0x77);
    assert_eq!(Rule::FRAME_POINTER.apply(&mut st, &copy(&bytes)), Ok(true));
    // rbx is unknown past code without CFI
    assert_eq!(st, state(0x4444, 0x2018, Some(0x2020)));
}

#[test]
fn plt_threshold() {
    let bytes = stack(&[7, 0x5555, 0x6666]);
    let s = copy(&bytes);
    let rule = Rule::JUST_RETURN.with_cfa(Cfa::Plt { threshold: 11 });
    // in a PLT entry, before its push: CFA = rsp + 8
    let mut before = state(0x1016, 0x2008, None);
    assert_eq!(rule.apply(&mut before, &s), Ok(true));
    assert_eq!((before.ip, before.sp), (0x5555, 0x2010));
    // after it: CFA = rsp + 16
    let mut after_push = state(0x101b, 0x2000, None);
    assert_eq!(rule.apply(&mut after_push, &s), Ok(true));
    assert_eq!((after_push.ip, after_push.sp), (0x5555, 0x2010));
}

#[test]
fn rbp_and_rbx_already_popped_in_an_epilogue() {
    // after `pop rbx; pop rbp; pop r12`: CFA = rsp + 24, and the CFI's rbp and rbx slots
    // (CFA - 40, CFA - 32) are below sp
    let bytes = stack(&[0x1111, 0x2222, 0x7777]);
    let rule = Rule::JUST_RETURN
        .with_cfa(cfa_in(Reg::Sp, 24))
        .with_bp(Value::saved(Base::Cfa, -40))
        .with_rbx(Value::saved(Base::Cfa, -32));
    let mut st = state(1, 0x2000, Some(0xbbbb));
    st.rbx = Rbx::Value(0xcccc);
    assert_eq!(rule.apply(&mut st, &copy(&bytes)), Ok(true));
    let mut want = state(0x7777, 0x2018, Some(0xbbbb));
    want.rbx = Rbx::Value(0xcccc);
    assert_eq!(st, want);
}

#[test]
fn cfa_in_r11_is_known_in_the_sampled_frame_only() {
    // LLVM's inline stack probe: r11 = the frame's bottom, rsp on its way down to it,
    // CFA = r11 + frame size
    let mut words = vec![0u64; 64];
    words[39] = 0x4444; // CFA - 8, CFA = 0x2000 + 320
    let bytes = stack(&words);
    let rule = Rule::JUST_RETURN.with_cfa(cfa_in(Reg::R11, 0x140 + 0x100));
    let mut st = state(0x1234, 0x2000, Some(5));
    st.r11 = Some(0x2000 - 0x100);
    st.rbx = Rbx::Value(6);
    assert_eq!(rule.apply(&mut st, &copy(&bytes)), Ok(true));
    let mut want = state(0x4444, 0x2140, Some(5));
    want.rbx = Rbx::Value(6);
    assert_eq!(st, want);
    // in its caller r11 is unknown: a CFA computed from it ends the stack
    assert_eq!(rule.apply(&mut st, &copy(&bytes)), Err(End::BadUnwindInfo));
    assert_eq!(st, want);
}

#[test]
fn cfa_in_rbx_and_rbx_restored_for_the_caller() {
    // _dl_fixup pushed rbx (CFA = rsp + 16, rbx at CFA - 16) and reused it; its caller
    // _dl_runtime_resolve has CFA = rbx + 56, its own caller's rbx at CFA - 56
    let mut words = vec![0u64; 0x210];
    let mut put = |addr: u64, v: u64| words[((addr - 0x2000) / 8) as usize] = v;
    put(0x2000, 0x3008); // _dl_fixup's saved rbx
    put(0x2008, 0x5555); // the return address into _dl_runtime_resolve
    put(0x3008, 0xabcd); // _dl_runtime_resolve's saved rbx: CFA (0x3040) - 56
    put(0x3038, 0x6666); // its return address: CFA - 8
    let bytes = stack(&words);
    let s = copy(&bytes);
    let fixup = Rule::JUST_RETURN
        .with_cfa(cfa_in(Reg::Sp, 16))
        .with_rbx(Value::saved(Base::Cfa, -16));
    let resolve = Rule::JUST_RETURN
        .with_cfa(cfa_in(Reg::Rbx, 56))
        .with_rbx(Value::saved(Base::Cfa, -56));
    let mut st = state(0x1111, 0x2000, None);
    st.rbx = Rbx::Value(0x9999);
    assert_eq!(fixup.apply(&mut st, &s), Ok(true));
    assert_eq!((st.ip, st.sp), (0x5555, 0x2010));
    // kept as its slot, read when needed
    assert_eq!(
        (st.rbx, rbx_of(&st, &s)),
        (Rbx::Saved(0x2000), Some(0x3008))
    );
    assert_eq!(resolve.apply(&mut st, &s), Ok(true));
    assert_eq!(
        (st.ip, st.sp, rbx_of(&st, &s)),
        (0x6666, 0x3040, Some(0xabcd))
    );

    // rbx's slot past the copy: the stack goes on, and ends only at a CFA computed from
    // rbx, for the reason the slot cannot be read
    let short = stack(&[0x7777, 0]);
    let capped = StackCopy {
        end: CopyEnd::Cap,
        ..copy(&short)
    };
    let mut st = state(0x1111, 0x2000, None);
    st.rbx = Rbx::Value(0x3008);
    let rule = Rule::JUST_RETURN.with_rbx(Value::saved(Base::Cfa, 200));
    assert_eq!(rule.apply(&mut st, &capped), Ok(true));
    assert_eq!((st.ip, st.rbx), (0x7777, Rbx::Saved(0x2008 + 200)));
    assert_eq!(resolve.apply(&mut st, &capped), Err(End::StackCap));
    // unknown rbx (past code without CFI): the stack ends there
    st.rbx = Rbx::Unknown;
    assert_eq!(resolve.apply(&mut st, &s), Err(End::BadUnwindInfo));
}

#[test]
fn cfa_that_does_not_grow_stops() {
    let bytes = stack(&[1, 2, 3]);
    let s = StackCopy {
        base: 0x2000,
        bytes: &bytes,
        end: CopyEnd::Cap,
    };
    let rule = Rule::JUST_RETURN.with_cfa(cfa_in(Reg::Sp, 0));
    let mut st = state(1, 0x2008, None);
    assert_eq!(rule.apply(&mut st, &s), Err(End::NoProgress));
    let rule = Rule::JUST_RETURN.with_cfa(cfa_in(Reg::Sp, -8));
    assert_eq!(rule.apply(&mut st, &s), Err(End::NoProgress));
    // rbp unknown after a frame that said so
    assert_eq!(
        Rule::FRAME_POINTER.apply(&mut st, &s),
        Err(End::BadUnwindInfo)
    );
}
