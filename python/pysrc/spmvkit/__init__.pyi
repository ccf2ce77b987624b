from typing import Any, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt

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
        precision: Optional[str] = None,
        backend: Optional[str] = None,
        params: Optional[Sequence[str]] = None,
    ) -> None: ...
    def apply(
        self,
        x: npt.ArrayLike,
        y: Optional[np.ndarray] = None,
        alpha: float = 1.0,
        beta: float = 0.0,
    ) -> np.ndarray: ...
    def __matmul__(self, x: npt.ArrayLike) -> np.ndarray: ...
    def update_values(self, data: npt.ArrayLike) -> str: ...
    @property
    def method(self) -> str: ...
    @property
    def deterministic(self) -> bool: ...
    @property
    def backend(self) -> str: ...
    @property
    def notes(self) -> list[tuple[str, str]]: ...
    @property
    def prep_seconds(self) -> float: ...
    def as_linear_operator(self) -> Any: ...
