// A scenario's model, parser and step kinds are LabScenarioModel's; who runs scenarios reads them through this module.
@_exported import LabScenarioModel
