"""Studies: runs that combine models, data and metrics, and the records of long runs.

The layer below the command line and beside :mod:`biaskit.report`: batch grids of experiments (``python -m
biaskit run``), calibration on planted controls, which metric to trust, debiasing against a planted bias,
replays of the seeds' printed tables, and the kept records of runs too long for ``make reproduce``.

=============================================  ===============================================================
:mod:`biaskit.studies.grid`                    batch grids of experiments from a small YAML file (models x
                                               datasets x metrics)
:mod:`biaskit.studies.grid_config`             a grid's configuration, datasets, models and the cells that run
:mod:`biaskit.studies.grid_output`             a grid's tables, plots and sentences
:mod:`biaskit.studies.distributed`             scale-out on Dask: sharded counts and chunked scoring
:mod:`biaskit.studies.calibration`             calibration of the metrics on planted-bias controls
:mod:`biaskit.studies.calibration_values`      the calibration's controlled items and measures (the
                                               registry's)
:mod:`biaskit.studies.calibration_stats`       the calibration's statistics: effects, tests, power, false
                                               positives
:mod:`biaskit.studies.metric_trust`            which metric to trust: every measure on controls retrained with
                                               several seeds
:mod:`biaskit.studies.metric_trust_stats`      the metric-trust statistics, recomputed from its record
:mod:`biaskit.studies.debiasing_study`         debiasing against a planted bias: removed, or only hidden?
:mod:`biaskit.studies.replay`                  seed 000's chapter 4 recomputed from the thesis's own scores
:mod:`biaskit.studies.louis_alexandre_replay`  seed 004 recomputed from its printed tables
:mod:`biaskit.studies.learning_curve_record`   seed 002's learning curve (Fig. 13), kept as a record
:mod:`biaskit.studies.cds_record`              seed 002's CDS-GAP debiasing (Table 4) at the thesis's size,
                                               kept as a record
:mod:`biaskit.studies.mt_gender_record`        seed 002's MT Gender fine-tune at the study's size, kept as a
                                               record
:mod:`biaskit.studies.domain_model_record`     seed 003's Table 5.4 arrows from a domain model, kept as a
                                               record
:mod:`biaskit.studies.xlnet_tables`            seed 004's XLNet tables on the bundled XLNet
:mod:`biaskit.studies.run_provenance`          where and how a recorded run ran: machine, versions, commit,
                                               files
:mod:`biaskit.studies.workspace`               a folder of one's own with the study notebooks
=============================================  ===============================================================
"""
