from typing import Any, Literal, Optional, Sequence, Tuple, TypeVar

import numpy as np

# NumPy arrays, CuPy arrays or PyTorch tensors (CPU or CUDA): the result is of the same kind.
V = TypeVar("V")

def methods() -> list[str]: ...
def load(path: str) -> Any: ...

class Plan:
    shape: Tuple[int, int]
    def __init__(
        self,
        A: Any,
        method: str = "auto",
        calls: int = 1000,
        deterministic: bool = False,
        precision: Optional[Literal["f32", "f64"]] = None,
        backend: Optional[Literal["cpu", "gpu"]] = None,
        params: Optional[Sequence[str]] = None,
    ) -> None: ...
    def apply(
        self,
        x: V,
        y: Optional[V] = None,
        alpha: float = 1.0,
        beta: float = 0.0,
    ) -> V: ...
    def __matmul__(self, x: V) -> V: ...
    def update_values(self, data: Any) -> str: ...
    @property
    def method(self) -> str: ...
    @property
    def deterministic(self) -> bool: ...
    @property
    def backend(self) -> str: ...
    @property
    def device(self) -> Optional[int]: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def notes(self) -> list[tuple[str, str]]: ...
    @property
    def prep_seconds(self) -> float: ...
    def as_linear_operator(
        self, library: Optional[Literal["cupy", "scipy"]] = None
    ) -> Any: ...
