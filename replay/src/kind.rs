//! What a frame is: code in a process's files, the kernel's, code compiled at run time, a
//! function of an interpreted language, a note where a stack stopped short, or the time a
//! thread spent off the CPU. Decided in one place, [`FrameKind::of`], from what the capture
//! holds (the frame's module and its kind, the unwinding record's marker module), and
//! carried by every name ([`crate::names::FrameName`]), the model's functions, every export
//! and the views, which colour by it (as fxprof's categories and blazesym's source
//! languages tag a frame with what it is, not with a flag for one case).
//!
//! A new kind (Python frames, from a format variant of their own) is one arm in
//! [`FrameKind::of`] and a colour in the views' palette (and in the flame graph's, if it
//! is to stand apart there); `--no-kernel` and the JSON `kernel` fields read
//! [`FrameKind::is_kernel`].

use hotspot_format::{FrameId, Module, ModuleId, ModuleKind, ThreadState};

use crate::capture::Capture;

/// The kind of a logical frame.
///
/// The order is what function keys sort by after name and module: every kind before
/// [`FrameKind::Kernel`], so a kernel function sorts after a user one of the same name and
/// module, as it did when the kind was a `kernel` flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FrameKind {
    /// Code in a file mapped into a process: an executable, a shared library, the vDSO.
    User,
    /// Code compiled at run time into anonymous memory, named by a perf map if at all;
    /// also a frame whose module the capture does not define (the format's `Jit` is "no
    /// file").
    Jit,
    /// A function of an interpreted language, named by its interpreter. No capture holds
    /// one yet: the format has no frame for it until Python frames add one.
    Interpreter,
    /// Not code: a note standing where a stack stopped short or a frame is missing
    /// (`[truncated: …]`, `[no unwind info: …]`, `[unknown frame]`, `[no frames]`,
    /// `[stack lost to damage]`).
    Marker,
    /// Time off the CPU in a state: the leaf every off-CPU sample's stack ends in
    /// ([`crate::names::FrameName::off_cpu`]).
    OffCpu(ThreadState),
    /// The kernel and its modules.
    Kernel,
}

impl FrameKind {
    /// One of each kind, every off-CPU state: what a test that every kind reaches every
    /// output walks.
    pub const ALL: [FrameKind; 8] = [
        FrameKind::User,
        FrameKind::Jit,
        FrameKind::Interpreter,
        FrameKind::Marker,
        FrameKind::OffCpu(ThreadState::Sleeping),
        FrameKind::OffCpu(ThreadState::Uninterruptible),
        FrameKind::OffCpu(ThreadState::Runnable),
        FrameKind::Kernel,
    ];

    /// The kind of capture frame `frame`: the one place it is decided. A frame the
    /// capture does not define is a marker (`[unknown frame]`); a frame of the module the
    /// unwinding record names for markers is one; the others are what their module is.
    pub fn of(capture: &Capture, frame: FrameId) -> FrameKind {
        match capture.frames.get(&frame) {
            Some(f) => FrameKind::in_module(capture, f.module, capture.modules.get(&f.module)),
            None => FrameKind::Marker,
        }
    }

    /// [`FrameKind::of`] a defined frame of module `id` (`module`: its definition, if
    /// any), for a caller that has looked both up already: naming every frame of every
    /// stack ([`crate::names::expand`]) would otherwise look each up twice.
    pub fn in_module(capture: &Capture, id: ModuleId, module: Option<&Module>) -> FrameKind {
        if capture.unwinding.and_then(|u| u.markers) == Some(id) {
            return FrameKind::Marker;
        }
        match module.map(|m| m.kind) {
            Some(ModuleKind::Elf | ModuleKind::Vdso) => FrameKind::User,
            Some(ModuleKind::Kernel | ModuleKind::KernelModule) => FrameKind::Kernel,
            Some(ModuleKind::Jit) | None => FrameKind::Jit,
        }
    }

    /// Kernel code: what `--no-kernel` and the views' `K` leave out, and what the JSON
    /// documents' `kernel` fields say.
    pub fn is_kernel(self) -> bool {
        self == FrameKind::Kernel
    }

    /// The kind's name in prose and test messages.
    pub fn name(self) -> &'static str {
        match self {
            FrameKind::User => "user",
            FrameKind::Jit => "jit",
            FrameKind::Interpreter => "interpreter",
            FrameKind::Marker => "marker",
            FrameKind::OffCpu(_) => "off-cpu",
            FrameKind::Kernel => "kernel",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hotspot_format::{Frame, FrameAddr, Module, Unwinding};

    #[test]
    fn the_capture_decides_each_frames_kind() {
        let mut c = Capture::default();
        for (id, kind) in [
            (0, ModuleKind::Elf),
            (1, ModuleKind::Vdso),
            (2, ModuleKind::Kernel),
            (3, ModuleKind::KernelModule),
            (4, ModuleKind::Jit),
            (5, ModuleKind::Elf),
        ] {
            c.modules.insert(
                id,
                Module {
                    id,
                    kind,
                    path: format!("m{id}"),
                    build_id: Vec::new(),
                },
            );
        }
        // Frame n in module n; frame 6 in a module the capture does not define.
        for id in 0..7 {
            c.frames.insert(
                id,
                Frame {
                    id,
                    module: id,
                    addr: FrameAddr::FileOffset(0),
                },
            );
        }
        c.unwinding = Some(Unwinding {
            markers: Some(5),
            ..Unwinding::default()
        });
        let kinds: Vec<FrameKind> = (0..8).map(|f| FrameKind::of(&c, f)).collect();
        use FrameKind::*;
        assert_eq!(
            kinds,
            [User, User, Kernel, Kernel, Jit, Marker, Jit, Marker],
            "elf, vdso, kernel, kernel module, jit, the markers' module, no module, no frame"
        );
        assert!(Kernel.is_kernel() && !User.is_kernel());
        // Without the unwinding record there are no markers: module 5 is just a file.
        c.unwinding = None;
        assert_eq!(FrameKind::of(&c, 5), User);
    }

    #[test]
    fn kernel_sorts_after_every_other_kind() {
        for k in FrameKind::ALL {
            assert!(k <= FrameKind::Kernel, "{k:?}");
        }
    }
}
