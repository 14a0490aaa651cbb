"""A toy metric package for biaskit: the mean cosine gap (its module :mod:`biaskit_toy_metric.metric`)."""
