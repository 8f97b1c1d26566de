"""JAX: jit and grad of a small loss on the GPU; prints the device kind and
rounded results."""

import jax
import jax.numpy as jnp

dev = jax.devices()[0]
print("platform", dev.platform)


@jax.jit
def loss(w, x, y):
    return jnp.mean((jnp.tanh(x @ w) - y) ** 2)


key = jax.random.PRNGKey(0)
kw, kx, ky = jax.random.split(key, 3)
w = jax.random.normal(kw, (32, 8))
x = jax.random.normal(kx, (64, 32))
y = jax.random.normal(ky, (64, 8))
grad = jax.jit(jax.grad(loss))
for step in range(5):
    w = w - 0.1 * grad(w, x, y)
    print(f"jax step {step} loss {float(loss(w, x, y)):.4f}")
