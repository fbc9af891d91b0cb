"""Each built-in scorer against its reference: torch's modules or the textbook formula computed by hand."""

from __future__ import annotations

import math

import torch

from attnlab.plugins import create_plugin

Q = torch.tensor([[[1.0, 0.0, 2.0]]])  # [1, 1, 3]
K = torch.tensor([[[1.0, 1.0, 0.0], [0.0, 2.0, 1.0], [3.0, 0.0, -1.0]]])  # [1, 3, 3]
V = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]])  # [1, 3, 2]


def test_dot_is_q_dot_k():
    scorer = create_plugin("scorers", "dot", 3, 3)
    assert scorer.score(Q, K).tolist() == [[[1.0, 2.0, 1.0]]]
    weights = torch.softmax(torch.tensor([1.0, 2.0, 1.0]), 0)
    out = scorer(Q, K, V)
    torch.testing.assert_close(out.weights[0, 0], weights)
    torch.testing.assert_close(out.context[0, 0], weights @ V[0])


def test_scaled_dot_divides_by_sqrt_dk():
    scorer = create_plugin("scorers", "scaled_dot", 3, 3)
    torch.testing.assert_close(scorer.score(Q, K), torch.tensor([[[1.0, 2.0, 1.0]]]) / math.sqrt(3))


def masked_attention_by_loops(q, k, v, mask):
    """softmax(q . k / sqrt(d)) over unmasked keys, and the weighted sum of values, one query at a time."""
    weights, context = torch.zeros(q.shape[0], q.shape[1], k.shape[1]), torch.zeros(q.shape[0], q.shape[1], v.shape[2])
    for b in range(q.shape[0]):
        keys = [j for j in range(k.shape[1]) if mask[b, j]]
        for i in range(q.shape[1]):
            scores = [sum(float(q[b, i, d] * k[b, j, d]) for d in range(q.shape[2])) / math.sqrt(q.shape[2]) for j in keys]
            exps = [math.exp(s - max(scores)) for s in scores]
            for j, e in zip(keys, exps):
                weights[b, i, j] = e / sum(exps)
                context[b, i] += weights[b, i, j] * v[b, j]
    return context, weights


def test_scaled_dot_with_mask_equals_the_loop_reference():
    scorer = create_plugin("scorers", "scaled_dot", 8, 8)
    q, k, v = torch.randn(3, 4, 8), torch.randn(3, 6, 8), torch.randn(3, 6, 5)
    mask = torch.arange(6)[None, :] < torch.tensor([6, 4, 1])[:, None]
    context, weights = masked_attention_by_loops(q, k, v, mask)
    out = scorer(q, k, v, mask)
    torch.testing.assert_close(out.weights, weights, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(out.context, context, atol=1e-6, rtol=1e-5)
    # context_only takes torch's fused kernel for several queries, the explicit path for one
    torch.testing.assert_close(scorer.context_only(q, k, v, mask), context, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(scorer.context_only(q[:, :1], k, v, mask), context[:, :1], atol=1e-6, rtol=1e-5)


def test_general_is_q_w_k():
    scorer = create_plugin("scorers", "general", 3, 3)
    with torch.no_grad():
        scorer.W.weight.copy_(torch.diag(torch.tensor([1.0, 2.0, 3.0])))
    # q W k with W = diag(1, 2, 3): [1*1 + 0 + 0, 0 + 0 + 2*3*1, 3 + 0 - 6]
    assert scorer.score(Q, K).tolist() == [[[1.0, 6.0, -3.0]]]


def test_general_accepts_unequal_sizes():
    scorer = create_plugin("scorers", "general", 4, 6)
    assert scorer(torch.randn(2, 1, 4), torch.randn(2, 5, 6), torch.randn(2, 5, 6)).weights.shape == (2, 1, 5)


def test_additive_is_v_tanh_wq_q_plus_wk_k():
    scorer = create_plugin("scorers", "additive", 3, 3, attention_dim=2)
    with torch.no_grad():
        scorer.W_q.weight.copy_(torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))
        scorer.W_k.weight.copy_(torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]))
        scorer.v.weight.copy_(torch.tensor([[2.0, -1.0]]))
    # W_q q = [1, 2]; W_k k_j = [1, 1], [2, 0], [0, 3]
    expected = [2 * math.tanh(1 + b0) - math.tanh(2 + b1) for b0, b1 in ((1, 1), (2, 0), (0, 3))]
    torch.testing.assert_close(scorer.score(Q, K)[0, 0], torch.tensor(expected))


def test_multihead_equals_torch_multihead_attention():
    embed, heads = 16, 4
    reference = torch.nn.MultiheadAttention(embed, heads, batch_first=True).eval()
    scorer = create_plugin("scorers", "multihead", embed, embed, heads=heads).eval()
    with torch.no_grad():
        w_q, w_k, w_v = reference.in_proj_weight.chunk(3)
        b_q, b_k, b_v = reference.in_proj_bias.chunk(3)
        for proj, w, b in ((scorer.q_proj, w_q, b_q), (scorer.k_proj, w_k, b_k), (scorer.v_proj, w_v, b_v)):
            proj.weight.copy_(w)
            proj.bias.copy_(b)
        scorer.out_proj.weight.copy_(reference.out_proj.weight)
        scorer.out_proj.bias.copy_(reference.out_proj.bias)
    q, kv = torch.randn(3, 4, embed), torch.randn(3, 7, embed)
    mask = torch.arange(7)[None, :] < torch.tensor([7, 4, 1])[:, None]
    expected, expected_weights = reference(q, kv, kv, key_padding_mask=~mask)
    out = scorer(q, kv, kv, mask)
    torch.testing.assert_close(out.context, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.weights, expected_weights, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(scorer.context_only(q, kv, kv, mask), expected, atol=1e-5, rtol=1e-5)
    _, per_head = reference(q, kv, kv, key_padding_mask=~mask, average_attn_weights=False)
    torch.testing.assert_close(out.head_weights, per_head, atol=1e-6, rtol=1e-5)
