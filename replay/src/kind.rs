//! What a frame is: code in a process's files, the kernel's, code compiled at run time, a
//! function of an interpreted language, a note where a stack stopped short, or the time a
//! thread spent off the CPU. Decided in one place, [`FrameKind::of`], from what the capture
//! holds (the frame's module and its kind, the unwinding record's marker module), and
//! carried by every name ([`crate::names::FrameName`]), the model's functions, every export
//! and the views, which colour by it (as fxprof's categories and blazesym's source
//! languages tag a frame with what it is, not with a flag for one case).
//!
//! A new kind is one arm in [`FrameKind::of`] and a colour in the views' palette and the
//! flame graph's ([`crate::export::svg::kind_color`]); `--no-kernel` and the JSON `kernel`
//! fields read [`FrameKind::is_kernel`], `--no-interpreter` reads
//! [`crate::model::Hide::keeps`], every JSON `kind` field [`FrameKind::name`].
//!
//! Python frames (format 1.5) are the frames of a module the capture marks as an
//! interpreter's frames (kind 21, role Frames): [`FrameKind::Python`]; the three markers the
//! recorder names in that module (`[python: …]`) are [`FrameKind::Marker`]s. The
//! interpreter's own native code, the eval loop and its helpers, is
//! [`FrameKind::Interpreter`]: frames of a module that is the image a walked interpreter
//! process runs in (kind 22's `path`: `libpython3.11.so.1.0`, or Debian's static
//! `python3.11`), or that the capture marks as an interpreter's runtime (kind 21, role
//! Runtime).

use hotspot_format::{FrameId, InterpreterRole, Module, ModuleId, ModuleKind, ThreadState};

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
    /// A Python function at a line, walked from the interpreter's frames and put by the
    /// recorder where the eval loop that ran it was (module `[python]`).
    Python,
    /// The native code of an interpreter whose frames were walked: the eval loop and its
    /// helpers in `libpython` or a static `python3.x`. Hidden, where a Python frame is on
    /// the stack, by `--no-interpreter` and the views' `P` ([`crate::model::Hide`]).
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
    pub const ALL: [FrameKind; 9] = [
        FrameKind::User,
        FrameKind::Jit,
        FrameKind::Python,
        FrameKind::Interpreter,
        FrameKind::Marker,
        FrameKind::OffCpu(ThreadState::Sleeping),
        FrameKind::OffCpu(ThreadState::Uninterruptible),
        FrameKind::OffCpu(ThreadState::Runnable),
        FrameKind::Kernel,
    ];

    /// The kind of capture frame `frame`: the one place it is decided. A frame the
    /// capture does not define is a marker (`[unknown frame]`); a frame of the module the
    /// unwinding record names for markers is one; a frame of an interpreter's frames
    /// module is a Python function, or a marker where its name is one (`[python: …]`); a
    /// frame of an interpreter's image is the interpreter's; the others are what their
    /// module is.
    pub fn of(capture: &Capture, frame: FrameId) -> FrameKind {
        match capture.frames.get(&frame) {
            Some(f) => {
                FrameKind::in_module(capture, frame, f.module, capture.modules.get(&f.module))
            }
            None => FrameKind::Marker,
        }
    }

    /// [`FrameKind::of`] defined frame `frame` of module `id` (`module`: its definition,
    /// if any), for a caller that has looked both up already: naming every frame of every
    /// stack ([`crate::names::expand`]) would otherwise look each up twice.
    pub fn in_module(
        capture: &Capture,
        frame: FrameId,
        id: ModuleId,
        module: Option<&Module>,
    ) -> FrameKind {
        if capture.unwinding.and_then(|u| u.markers) == Some(id) {
            return FrameKind::Marker;
        }
        if let Some(m) = capture.interpreter_modules.get(&id) {
            match m.role {
                InterpreterRole::Frames => return python_frame(capture, frame),
                InterpreterRole::Runtime => return FrameKind::Interpreter,
            }
        }
        match module.map(|m| (m.kind, m)) {
            Some((ModuleKind::Elf, m)) if is_interpreter_image(capture, &m.path) => {
                FrameKind::Interpreter
            }
            Some((ModuleKind::Elf | ModuleKind::Vdso, _)) => FrameKind::User,
            Some((ModuleKind::Kernel | ModuleKind::KernelModule, _)) => FrameKind::Kernel,
            Some((ModuleKind::Jit, _)) | None => FrameKind::Jit,
        }
    }

    /// Kernel code: what `--no-kernel` and the views' `K` leave out, and what the JSON
    /// documents' `kernel` fields say.
    pub fn is_kernel(self) -> bool {
        self == FrameKind::Kernel
    }

    /// The kind's name: in prose, test messages and the JSON documents' `kind` fields.
    pub fn name(self) -> &'static str {
        match self {
            FrameKind::User => "user",
            FrameKind::Jit => "jit",
            FrameKind::Python => "python",
            FrameKind::Interpreter => "interpreter",
            FrameKind::Marker => "marker",
            FrameKind::OffCpu(_) => "off-cpu",
            FrameKind::Kernel => "kernel",
        }
    }
}

/// A frame of an interpreter's frames module: a Python function, unless its name is one of
/// the recorder's markers (SPEC.md §5, kind 21: `[python: unreadable code object]`, `[python:
/// more frames than --python-frames]`, `[python: frames did not match the native stack]`).
/// A qualified name never starts with `[` (`<module>`, `<lambda>` use `<`).
fn python_frame(capture: &Capture, frame: FrameId) -> FrameKind {
    let marker = capture
        .symbols
        .get(&frame)
        .and_then(|s| capture.strings.get(&s.function))
        .is_some_and(|name| name.starts_with('['));
    if marker {
        FrameKind::Marker
    } else {
        FrameKind::Python
    }
}

/// Whether `path` is the file a walked interpreter runs in (kind 22's `path`), also once
/// the recorder found it replaced on disk (` (deleted)`, as the module's path then says).
fn is_interpreter_image(capture: &Capture, path: &str) -> bool {
    if capture.interpreter_images.is_empty() {
        return false;
    }
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    capture.interpreter_images.contains(path)
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

    /// Module 0 `[python]` (an interpreter's frames), 1 the walked interpreter's image, 2
    /// a C extension, 3 the image of an interpreter that was not walked, 4 a module the
    /// capture marks as an interpreter's runtime, 5 the walked image replaced on disk.
    /// Frame n is in module n; frame 10 is a marker of module 0.
    #[test]
    fn python_frames_and_the_interpreters_own_code_are_told_apart() {
        use hotspot_format::{
            InterpreterModule, InterpreterProcess, InterpreterStatus, Language, Record, Symbol,
        };
        let mut c = Capture::default();
        let mut add = |r| c.add(r);
        for (id, path) in [
            (0, "[python]"),
            (1, "/usr/lib/libpython3.11.so.1.0"),
            (2, "/usr/lib/python3.11/lib-dynload/zlib.so"),
            (3, "/opt/python2.7"),
            (4, "/opt/embedded-runtime.so"),
            (5, "/usr/lib/libpython3.11.so.1.0 (deleted)"),
        ] {
            add(Record::Module(Module {
                id,
                kind: ModuleKind::Elf,
                path: path.into(),
                build_id: Vec::new(),
            }));
        }
        for (id, module) in [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (10, 0)] {
            add(Record::Frame(Frame {
                id,
                module,
                addr: FrameAddr::FileOffset(u64::from(id)),
            }));
        }
        for (frame, string, text) in [
            (0, 1, "Worker.run"),
            (10, 2, "[python: frames did not match the native stack]"),
        ] {
            add(Record::String {
                id: string,
                text: text.into(),
            });
            add(Record::Symbol(Symbol {
                frame,
                function: string,
                ..Symbol::default()
            }));
        }
        for (module, role) in [(0, InterpreterRole::Frames), (4, InterpreterRole::Runtime)] {
            add(Record::InterpreterModule(InterpreterModule {
                module,
                language: Language::Python,
                role,
            }));
        }
        for (pid, path, status) in [
            (
                7,
                "/usr/lib/libpython3.11.so.1.0",
                InterpreterStatus::Walked,
            ),
            (
                8,
                "/opt/python2.7",
                InterpreterStatus::Unsupported {
                    reason: "2.7".into(),
                },
            ),
        ] {
            add(Record::InterpreterProcess(InterpreterProcess {
                pid,
                path: path.into(),
                status,
                ..InterpreterProcess::default()
            }));
        }
        use FrameKind::*;
        let kinds: Vec<FrameKind> = [0, 1, 2, 3, 4, 5, 10]
            .into_iter()
            .map(|f| FrameKind::of(&c, f))
            .collect();
        assert_eq!(
            kinds,
            [
                Python,
                Interpreter,
                User,
                User,
                Interpreter,
                Interpreter,
                Marker
            ],
            "a Python function, the walked image, a C extension, an image not walked, a \
             runtime module, the walked image deleted, a marker of [python]"
        );
        assert_eq!(
            (Python.name(), Interpreter.name()),
            ("python", "interpreter")
        );
    }

    #[test]
    fn kernel_sorts_after_every_other_kind() {
        for k in FrameKind::ALL {
            assert!(k <= FrameKind::Kernel, "{k:?}");
        }
    }
}
