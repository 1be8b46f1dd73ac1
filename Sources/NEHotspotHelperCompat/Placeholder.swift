@_exported import HotspotHelper
