//! Parameter checks shared by method rooms. The block-size range keeps a launch within what the
//! `gpu/prelude.cu` helpers assume: whole warps (`warp_reduce_sum` and `warp_reduce_sum_width`
//! shuffle over a full mask; `cta_gather_sum` wants `blockDim.x` a multiple of 32) and at most
//! 32 warps (`cta_gather_sum`'s `wsum` holds 32 warp sums; 1024 is also CUDA's limit).

use crate::methods::params::{multiple_of, MultipleOf};

/// The block sizes a launch may take, as a parameter range: a positive multiple of 32, at most
/// 1024 (`threads: u32 = 256, in THREADS;` in a room's parameter declaration).
pub(crate) const THREADS: MultipleOf<u32> = multiple_of(32, 32..=1024);
