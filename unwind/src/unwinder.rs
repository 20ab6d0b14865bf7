//! Walks one sample's stack from its registers to the outermost frame it can reach.

use crate::cache::RuleCache;
use crate::cfi::{Compiled, Context};
use crate::epilogue;
use crate::rule::{Rule, State};
use crate::{AddressSpace, CodeAt, End, Frame, MAX_FRAMES, Regs, StackCopy};

/// Unwinds samples. Owns the rule cache (fixed size) and gimli's evaluation context, so
/// keep one per recording thread and reuse it: its speed comes from the cache.
pub struct Unwinder {
    cache: RuleCache,
    ctx: Box<Context>,
}

impl std::fmt::Debug for Unwinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unwinder")
            .field("hits", &self.cache.hits)
            .field("misses", &self.cache.misses)
            .finish_non_exhaustive()
    }
}

impl Default for Unwinder {
    fn default() -> Self {
        Self::new()
    }
}

impl Unwinder {
    pub fn new() -> Self {
        Unwinder {
            cache: RuleCache::new(),
            ctx: Box::new(Context::new()),
        }
    }

    /// Forgets every cached rule (cheap: the entries are made stale, not erased). For
    /// measurements of cold unwinding; nothing else needs it.
    pub fn forget_rules(&mut self) {
        self.cache.clear();
    }

    /// Rule-cache lookups so far that hit and that missed.
    pub fn cache_stats(&self) -> (u64, u64) {
        (self.cache.hits, self.cache.misses)
    }

    /// Unwinds one sample into `out` (cleared first): the PC first (exact), then each
    /// caller's return address, outermost last. Returns why it stopped; `out` holds every
    /// frame found before that, the last being the one whose caller was not found. An
    /// unmapped return address is not added; the sampled PC always is.
    pub fn unwind(
        &mut self,
        regs: Regs,
        stack: &StackCopy,
        space: &mut impl AddressSpace,
        out: &mut Vec<Frame>,
    ) -> End {
        out.clear();
        let mut st = State::sampled(regs);
        let mut exact = true;
        loop {
            // The leaf PC is looked up as is, a return address at the call before it.
            let lookup = if exact { st.ip } else { st.ip.wrapping_sub(1) };
            let code = space.code_at(lookup);
            if matches!(code, CodeAt::Unmapped) && !out.is_empty() {
                return End::Unmapped;
            }
            if out.len() >= MAX_FRAMES {
                return End::DepthLimit;
            }
            out.push(Frame { addr: st.ip, exact });
            // Without CFI: whether rbp = 0 may mark the outermost frame (see frame_pointer).
            let mut zero_bp_ends = false;
            let anonymous = matches!(code, CodeAt::Anonymous);
            let rule = match code {
                CodeAt::Unmapped => return End::Unmapped,
                CodeAt::Anonymous => None,
                CodeAt::Module { module, svma } => {
                    zero_bp_ends = !module.has_cfi();
                    let ctx = &mut self.ctx;
                    match self
                        .cache
                        .get(module.id(), svma, || module.compile(svma, ctx))
                    {
                        Compiled::Rule(rule) => Some(rule),
                        // The entry point without CFI is the first thread's outermost frame.
                        Compiled::NoFde if module.at_entry(svma) => return End::Complete,
                        Compiled::NoFde => None,
                        Compiled::Bad => return End::BadUnwindInfo,
                    }
                }
            };
            let went_on = match rule {
                Some(rule) => {
                    exact = rule.signal;
                    if rule.signal {
                        // The kernel's return address into a signal trampoline is its
                        // entry, not the instruction after a call; and the caller's PC
                        // (read from the ucontext) was interrupted: both exact.
                        if let Some(frame) = out.last_mut() {
                            frame.exact = true;
                        }
                    }
                    rule.apply(&mut st, stack)
                }
                None => {
                    // Code is read for JIT code at any frame, and in a module only at an
                    // interrupted PC (the leaf): a module's code without an FDE at a return
                    // address is rare, and each read costs the recorder a syscall.
                    let interrupted = exact;
                    exact = false;
                    let mut code = [0u8; epilogue::CODE_BYTES];
                    let n = if anonymous || interrupted {
                        space.read_code(st.ip, &mut code)
                    } else {
                        0
                    };
                    match epilogue::unwind(&code[..n.min(code.len())], &mut st, stack) {
                        Some(result) => result,
                        None => frame_pointer(&mut st, stack, zero_bp_ends),
                    }
                }
            };
            match went_on {
                Err(end) => return end,
                Ok(false) => return End::Complete,
                Ok(true) => {}
            }
        }
    }
}

/// The frame-pointer rule for code without CFI, if rbp looks like a frame pointer: set,
/// 8-aligned, not below sp. Otherwise there is no way on: [`End::NoUnwindInfo`].
///
/// In a module without any CFI, rbp = 0 is the outermost frame: the x86_64 ABI has the
/// deepest frame mark itself so (`_start` clears rbp), and nothing else says where such a
/// stack ends. In JIT code or in a module whose CFI merely misses this address, rbp = 0
/// only says rbp is no frame pointer.
fn frame_pointer(st: &mut State, stack: &StackCopy, zero_bp_ends: bool) -> Result<bool, End> {
    match st.bp {
        Some(0) if zero_bp_ends => Ok(false),
        Some(bp) if bp % 8 == 0 && bp >= st.sp => {
            // rbp far outside the copy is not a frame pointer of this stack.
            stack.check_cfa(bp).map_err(|end| match end {
                End::StackCap | End::UnreadablePage => end,
                _ => End::NoUnwindInfo,
            })?;
            Rule::FRAME_POINTER.apply(st, stack)
        }
        _ => Err(End::NoUnwindInfo),
    }
}
