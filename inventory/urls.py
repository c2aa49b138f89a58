"""Inventory's pages: clusters and pools, a pool and its dashboard, a node, fragmentation, allocations."""

from django.urls import path

from inventory import views

urlpatterns = [
    path("inventory/", views.clusters, name="inventory"),
    path(
        "inventory/clusters/<uuid:cluster_id>/enforcement/",
        views.cluster_enforcement,
        name="inventory-cluster-enforcement",
    ),
    path("inventory/pools/<uuid:pool_id>/", views.pool_detail, name="inventory-pool"),
    path("inventory/pools/<uuid:pool_id>/dashboard/", views.pool_dashboard, name="pool-dashboard"),
    path("inventory/nodes/<uuid:node_id>/", views.node_detail, name="inventory-node"),
    path("inventory/fragmentation/", views.fragmentation, name="inventory-fragmentation"),
    path("inventory/allocations/", views.allocations, name="inventory-allocations"),
]
